// Reading Hugging Face byte-level BPE tables: tokenizer.json (GPT-2,
// Llama 3, Qwen2 …) and GPT-2's older vocab.json + merges.txt pair. Pure
// parsing: ByteLevelBpe::Create checks the tables themselves.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "text/byte_level_bpe.h"

namespace pw {

struct BpeFile {
  BpeTables tables;
  BpeOptions options;
  // The special token the post-processor puts before every sequence
  // (Llama 3's <|begin_of_text|>), when it does.
  std::optional<int32_t> template_bos;
};

// Parses tokenizer.json text. InvalidArgument naming `source` and the JSON
// field (e.g. "pre_tokenizer.pretokenizers[1].type") for what this reader
// cannot run: a model other than BPE, a non-byte-level pre-tokenizer
// (SentencePiece's Metaspace: give tokenizer.model instead), a normaliser
// other than NFC, a Split behaviour other than "Isolated".
Result<BpeFile> ParseTokenizerJson(std::string_view json_text, const std::string& source);

// Reads GPT-2's vocab.json + merges.txt: GPT-2's split pattern, and
// "<|endoftext|>" as a special added token when the vocabulary has it.
// NotFound / InvalidArgument naming the file.
Result<BpeFile> ReadGpt2BpeFiles(const std::string& vocab_json_path, const std::string& merges_txt_path);

}  // namespace pw
