// RegexSplitter: the pre-tokenizer step of byte-level BPE. Cuts text into
// the pieces a regex matches and the gaps between them (Hugging Face's
// `Split` with behaviour "Isolated"; GPT-2's ByteLevel regex is one such
// pattern), so merges never cross a word boundary.
//
// Patterns are Oniguruma/Python-regex syntax as tokenizer.json writes them
// (\p{L}, \p{N}, (?i:...), lookahead); PCRE2 in UTF + Unicode-property mode
// reads them with the same meaning, JIT-compiled when the CPU allows.
//
// Thread-safety: immutable after Compile; Split may run on many threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pw {

// GPT-2's pre-tokenizer pattern (Hugging Face ByteLevel with use_regex).
inline constexpr std::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class RegexSplitter {
 public:
  // InvalidArgument with PCRE2's message and the offset in `pattern` when it
  // does not compile.
  static Result<RegexSplitter> Compile(std::string_view pattern);

  // Appends to `pieces` the matches of the pattern in `text` and the
  // non-empty gaps between them, in order; together they are `text`.
  // `text` must be valid UTF-8 (the caller checks once per input).
  // InvalidArgument naming the byte offset when the regex engine gives up
  // (a match or stack limit on pathological text) rather than split wrongly.
  Status Split(std::string_view text, std::vector<std::string_view>& pieces) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  RegexSplitter(std::string pattern, std::shared_ptr<const Code> code)
      : pattern_(std::move(pattern)), code_(std::move(code)) {}

  std::string pattern_;
  std::shared_ptr<const Code> code_;
};

}  // namespace pw
