// Reading Hugging Face tokenizer files: tokenizer.json in its two families
// — byte-level BPE (GPT-2, Llama 3, Qwen2/3: a ByteLevel pre-tokenizer) and
// SentencePiece style (Llama 2, Mistral, Gemma, Unigram models: "▁" for a
// space, <0x..> byte fallback) — and GPT-2's older vocab.json + merges.txt
// pair. Pure parsing: the tokenizers' Create functions check the tables.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/status.h"
#include "text/byte_level_bpe.h"
#include "text/piece_tokenizer.h"

namespace pw {

struct BpeFile {
  BpeTables tables;
  BpeOptions options;
  // The special token the post-processor puts before every sequence
  // (Llama 3's <|begin_of_text|>), when it does.
  std::optional<int32_t> template_bos;
};

struct PieceFile {
  PieceTables tables;
  PieceOptions options;
  std::optional<int32_t> template_bos;  // Llama 2's <s>, Gemma's <bos>
};

// Reads tokenizer.json text as whichever family it is: byte-level when its
// pre-tokenizer (or decoder) has a ByteLevel step, SentencePiece style
// otherwise. InvalidArgument naming `source` and the JSON field (e.g.
// "normalizer.normalizers[2].type") for what pipewright cannot run.
Result<std::variant<BpeFile, PieceFile>> ReadTokenizerJson(std::string_view json_text, const std::string& source);

// Parses a byte-level BPE tokenizer.json. InvalidArgument naming `source`
// and the field for anything else: a model other than BPE, no ByteLevel
// pre-tokenizer, a normaliser other than NFC, a Split behaviour other than
// "Isolated".
Result<BpeFile> ParseTokenizerJson(std::string_view json_text, const std::string& source);

// Reads GPT-2's vocab.json + merges.txt: GPT-2's split pattern, and
// "<|endoftext|>" as a special added token when the vocabulary has it.
// NotFound / InvalidArgument naming the file.
Result<BpeFile> ReadGpt2BpeFiles(const std::string& vocab_json_path, const std::string& merges_txt_path);

}  // namespace pw
