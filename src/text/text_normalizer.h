// TextNormalizer: the `normalizer` of a tokenizer.json, as data — a list of
// steps applied in order to each stretch of text between added tokens
// before the model sees it. SentencePiece-style files use Prepend("▁") and
// Replace(" " → "▁"); others NFC/NFKC, Lowercase, StripAccents.
//
// Thread-safety: immutable; Apply may run on many threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pw {

enum class UnicodeForm { kNfc, kNfd, kNfkc, kNfkd };

// `text` (valid UTF-8) in the normal form; ASCII comes back unchanged at once.
std::string UnicodeNormalized(std::string_view text, UnicodeForm form);

struct NormalizerStep {
  enum class Kind {
    kPrepend,       // `text` before a non-empty input
    kReplace,       // every `from` (a literal string) becomes `text`
    kUnicode,       // `form`
    kLowercase,     // each code point's simple lowercase mapping
    kStripAccents,  // drops nonspacing marks (Mn), as after NFD/NFKD
    kStrip,         // trims whitespace: `left` / `right`
  };
  Kind kind = Kind::kPrepend;
  std::string text;
  std::string from;
  UnicodeForm form = UnicodeForm::kNfc;
  bool left = false, right = false;
};

class TextNormalizer {
 public:
  TextNormalizer() = default;
  explicit TextNormalizer(std::vector<NormalizerStep> steps) : steps_(std::move(steps)) {}

  // `text` after every step; `text` must be valid UTF-8.
  std::string Apply(std::string_view text) const;
  bool empty() const { return steps_.empty(); }
  const std::vector<NormalizerStep>& steps() const { return steps_; }

 private:
  std::vector<NormalizerStep> steps_;
};

// Every `from` in `text` (left to right, not overlapping) replaced by `to`.
std::string ReplaceAll(std::string_view text, std::string_view from, std::string_view to);

}  // namespace pw
