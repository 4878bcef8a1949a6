// PieceTokenizer: a SentencePiece-style tokenizer.json (Llama 2, Mistral,
// Gemma, T5/ALBERT-style Unigram). Unlike byte-level BPE, its vocabulary is
// made of Unicode pieces where "▁" stands for a space, and bytes appear only
// as `<0x..>` fallback tokens. Encoding, per stretch of text between added
// tokens:
//   1. the normalizer (text_normalizer.h): e.g. Prepend("▁"), Replace(" "→"▁");
//   2. the Metaspace pre-tokenizer when there is one: spaces → "▁", a "▁"
//      prepended (always / first stretch only / never), then a cut before
//      every "▁";
//   3. the model: BPE from single characters (merges in rank order; a
//      character the vocabulary lacks becomes its UTF-8 bytes' `<0x..>`
//      tokens, else unk) or Unigram (Viterbi over the pieces' log-probability
//      scores; unknown characters cost the lowest score − 10, runs of them
//      fuse into one unk).
// Decoding runs the file's decoder steps over the token strings: Replace,
// ByteFallback (`<0x..>` runs back to UTF-8, U+FFFD for invalid runs), Fuse,
// Strip, Metaspace. All of this follows Hugging Face's tokenizers library,
// whose ids the tests hold it to.
//
// Thread-safety: immutable apart from a word cache behind its own lock.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/added_tokens.h"
#include "text/bpe_merges.h"
#include "text/string_map.h"
#include "text/text_normalizer.h"
#include "text/tokenizer.h"
#include "text/word_cache.h"

namespace pw {

enum class PieceModel { kBpe, kUnigram };

enum class PrependScheme { kAlways, kFirst, kNever };

struct MetaspaceOptions {
  bool enabled = false;
  std::string replacement = "\xE2\x96\x81";  // "▁"
  PrependScheme prepend = PrependScheme::kAlways;
  bool split = true;  // cut before every replacement character
};

struct DecodeStep {
  enum class Kind { kReplace, kByteFallback, kFuse, kStrip, kMetaspace };
  Kind kind = Kind::kFuse;
  std::string from, to;     // kReplace: literal `from` → `to`
  std::string content;      // kStrip: the character stripped
  int start = 0, stop = 0;  // kStrip: at most this many from each end
  MetaspaceOptions metaspace;  // kMetaspace
};

struct PieceTables {
  PieceModel model = PieceModel::kBpe;
  std::vector<std::string> pieces;  // by id; "" for ids only added tokens use
  std::vector<float> scores;        // Unigram: by id
  std::vector<std::pair<std::string, std::string>> merges;  // BPE: highest priority first
  std::vector<AddedToken> added;
  std::optional<int32_t> unk_id;
  bool byte_fallback = false;
  bool fuse_unk = false;  // BPE: consecutive unknown characters give one unk (Unigram always fuses)
};

struct PieceOptions {
  TextNormalizer normalizer;
  MetaspaceOptions metaspace;
  std::vector<DecodeStep> decoder;
};

class PieceTokenizer final : public Tokenizer {
 public:
  // Checks the tables: ids unique, merges name pieces, unk_id in range.
  // InvalidArgument naming `source` and the first offending entry.
  static Result<std::unique_ptr<PieceTokenizer>> Create(PieceTables tables, PieceOptions options,
                                                        const std::string& source);

  int64_t vocab_size() const override { return static_cast<int64_t>(pieces_.size()); }
  std::optional<int32_t> TokenId(const std::string& token) const override;
  std::string_view kind() const override { return "sentencepiece"; }
  std::optional<std::string> PieceText(int32_t id) const override {
    if (id < 0 || id >= vocab_size() || pieces_[id].empty()) return std::nullopt;
    return pieces_[id];
  }


 protected:
  Result<std::vector<int32_t>> EncodeText(std::string_view text) const override;
  Result<std::string> DecodeIds(std::span<const int32_t> ids, bool skip_special) const override;
 private:
  PieceTokenizer() = default;
  // Appends the ids of one stretch between added tokens; `at_start`: it
  // begins the text (Metaspace's "first" scheme).
  void EncodeStretch(std::string_view text, bool at_start, std::vector<int32_t>& out) const;
  // Appends the ids of one word (normalized, no cut inside), cached.
  void EncodeWord(std::string_view word, std::vector<int32_t>& out) const;
  void EncodeBpe(std::string_view word, std::vector<int32_t>& out) const;
  void EncodeUnigram(std::string_view word, std::vector<int32_t>& out) const;
  // Appends the `<0x..>` ids of `text`'s bytes; false (nothing appended)
  // when byte fallback is off or a byte token is missing.
  bool AppendByteTokens(std::string_view text, std::vector<int32_t>& out) const;
  // Where `word` may be cut without changing its ids: before each "▁"
  // that follows a character no piece joins to a "▁" (BPE merges and
  // Unigram pieces then never cross the cut).
  void CutWords(std::string_view text, std::vector<std::string_view>& words) const;

  PieceModel model_ = PieceModel::kBpe;
  std::vector<std::string> pieces_;
  StringMap<int32_t> ids_;
  std::vector<float> scores_;
  float unk_score_ = 0;
  size_t longest_piece_ = 0;  // bytes
  BpeMerges merges_;
  AddedTokens added_;
  std::optional<int32_t> unk_id_;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  std::vector<int32_t> byte_ids_;  // byte → id of "<0xXX>", or -1
  // Characters some piece holds right before a "▁": a cut after one of
  // them could split that piece.
  std::vector<bool> joined_before_space_;  // by code point
  std::vector<bool> is_piece_;             // by code point: the character alone is a piece
  bool may_cut_ = false;
  PieceOptions options_;

  mutable WordCache cache_;  // word → ids
};

}  // namespace pw
