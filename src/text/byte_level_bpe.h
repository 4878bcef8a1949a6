// ByteLevelBpe: Hugging Face byte-level BPE (GPT-2, Llama 3, Qwen2). Text is
// cut at added tokens ("<|endoftext|>" and other specials, matched
// literally), optionally NFC-normalised, split by the pre-tokenizer regexes,
// each piece's bytes mapped to GPT-2's 256 printable stand-in characters,
// and merged pair by pair in merge-rank order into vocabulary tokens.
// Decoding maps the stand-ins back to bytes, so encode→decode returns the
// original UTF-8 exactly.
//
// The tables come from tokenizer.json (hf_tokenizer_json.h) or GPT-2's
// vocab.json + merges.txt; this file knows neither format.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "text/added_tokens.h"
#include "text/bpe_merges.h"
#include "text/regex_splitter.h"
#include "text/tokenizer.h"
#include "text/word_cache.h"

namespace pw {

struct BpeTables {
  // Tokens as the vocabulary writes them (byte stand-ins for byte-level).
  std::unordered_map<std::string, int32_t> vocab;
  // Merge rules, highest priority first.
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<AddedToken> added;
};

struct BpeOptions {
  std::vector<std::string> split_patterns;  // applied in order; empty: no split
  bool add_prefix_space = false;  // ByteLevel: prepend " " unless text starts with one
  bool ignore_merges = false;     // a piece that is itself a token skips merging (Llama 3)
  bool nfc = false;               // NFC-normalise before splitting (Qwen2)
};

class ByteLevelBpe final : public Tokenizer {
 public:
  // Checks the tables: every byte has its stand-in token, every merge's
  // parts and result are tokens, ids are unique. InvalidArgument naming
  // `source` (the file) and the first offending entry otherwise.
  static Result<std::unique_ptr<ByteLevelBpe>> Create(BpeTables tables, BpeOptions options,
                                                      const std::string& source);

  int64_t vocab_size() const override { return static_cast<int64_t>(id_to_token_.size()); }
  // Decode of the one id; nullopt for special added tokens.
  std::optional<std::string> TokenBytes(int32_t id) const override;
  std::string_view kind() const override { return "bpe"; }
  bool EncodesNewlineCutsAlike() const override { return !options_.add_prefix_space && !splitters_.empty(); }

  // The id of `token` as the vocabulary or the added tokens write it.
  std::optional<int32_t> TokenId(const std::string& token) const override;


 protected:
  Result<std::vector<int32_t>> EncodeText(std::string_view text) const override;
  Result<std::string> DecodeIds(std::span<const int32_t> ids, bool skip_special) const override;
 private:
  ByteLevelBpe() = default;
  // Appends the ids of one pre-tokenized piece (raw bytes).
  void EncodePiece(std::string_view piece, std::vector<int32_t>& out) const;
  // Appends the ids of text that holds no added token.
  Status EncodeOrdinary(std::string_view text, std::vector<int32_t>& out) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<int32_t> byte_token_;  // byte → id of its stand-in character
  std::vector<int16_t> stand_in_byte_;  // stand-in code point → byte, or -1
  BpeMerges merges_;
  AddedTokens added_;
  std::vector<RegexSplitter> splitters_;
  BpeOptions options_;

  mutable WordCache cache_;  // piece → ids
};

// GPT-2's byte ↔ stand-in map: printable Latin-1 bytes stand for
// themselves, the other 68 bytes for U+0100…U+0143 in byte order.
char32_t ByteStandIn(uint8_t byte);

}  // namespace pw
