// Tokenizer: text ↔ token ids in a model's own vocabulary. Three kinds sit
// behind this one interface: the byte-level GPT's identity map (id = byte),
// Hugging Face byte-level BPE (tokenizer.json, or GPT-2's vocab.json +
// merges.txt), and SentencePiece (tokenizer.model). LoadTokenizer
// (tokenizer_loader.h) picks the kind from the files a model directory holds.
//
// Encode never adds BOS/EOS itself: callers that start a sequence ask
// special().add_bos, as Hugging Face's `add_special_tokens=True` would.
//
// Thread-safety: a loaded tokenizer is immutable apart from an internal
// word cache guarded by its own lock; Encode and Decode may be called from
// any number of threads at once.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pw {

// The ids that start and end a sequence, from generation_config.json /
// tokenizer_config.json / config.json (first that says).
struct SpecialTokens {
  std::optional<int32_t> bos;
  std::optional<int32_t> eos;
  // Generation stops at any of these (eos first; Llama 3 instruct models list
  // several end-of-turn ids).
  std::vector<int32_t> stop_ids;
  // Whether a new sequence starts with bos (Llama: yes; GPT-2, Qwen2: no).
  bool add_bos = false;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids of `text` (UTF-8). Special tokens written literally in the
  // text (e.g. "<|endoftext|>") become their ids. InvalidArgument naming the
  // byte offset when `text` is not valid UTF-8 (only the byte-level GPT's
  // kind takes any bytes). The checks are made here once for every kind,
  // as llama.cpp's vocabulary does; EncodeText sees checked text.
  Result<std::vector<int32_t>> Encode(std::string_view text) const;

  // The text of `ids`. skip_special: drop special tokens (bos, eos, added
  // control tokens) from the text, as generation output usually wants.
  // InvalidArgument naming the position of an id outside [0, vocab_size())
  // (checked here; DecodeIds sees ids in range).
  Result<std::string> Decode(std::span<const int32_t> ids, bool skip_special = false) const;

  // One past the largest id Encode can return.
  virtual int64_t vocab_size() const = 0;

  // The id of a token written as the vocabulary writes it (e.g.
  // "<|endoftext|>", "</s>"), when there is one.
  virtual std::optional<int32_t> TokenId(const std::string& token) const = 0;

  // Whether encoding a text in pieces cut just after a newline that a
  // non-space follows gives the ids of encoding it whole (regex
  // pre-tokenizers never join across such a cut; SentencePiece adds a
  // leading "▁" to every call, and so does add_prefix_space). TokenizeCorpus
  // cuts long documents only when this holds.
  virtual bool EncodesNewlineCutsAlike() const { return false; }

  // The bytes token `id` adds to a text wherever it stands, or nullopt for
  // special tokens, ids out of range, and kinds whose pieces change with
  // their neighbours (SentencePiece drops a leading space at the start).
  // Structured output (constrain/token_constraint.h) walks the vocabulary
  // through this.
  virtual std::optional<std::string> TokenBytes(int32_t id) const {
    (void)id;
    return std::nullopt;
  }
  // Token `id` as the vocabulary writes it ("▁Hello", "<0xF0>"), for kinds
  // whose one-token Decode loses what the piece is (SentencePiece style
  // strips the leading space); nullopt where Decode shows it (byte-level).
  virtual std::optional<std::string> PieceText(int32_t id) const {
    (void)id;
    return std::nullopt;
  }
  // "byte", "bpe" or "sentencepiece": what `pipewright tokenize` and the
  // manifest report.
  virtual std::string_view kind() const = 0;

  const SpecialTokens& special() const { return special_; }
  void set_special(SpecialTokens special) { special_ = std::move(special); }

 protected:
  // Whether Encode takes only valid UTF-8 (every kind but byte-level ids).
  virtual bool EncodesUtf8Only() const { return true; }
  // Encode after its checks.
  virtual Result<std::vector<int32_t>> EncodeText(std::string_view text) const = 0;
  // Decode after its checks: every id is in [0, vocab_size()). A kind with
  // holes in its ids (a vocabulary that skips some) refuses those itself.
  virtual Result<std::string> DecodeIds(std::span<const int32_t> ids, bool skip_special) const = 0;

 private:
  SpecialTokens special_;
};

}  // namespace pw
