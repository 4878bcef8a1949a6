// LoadTokenizer: a model's own tokenizer from the files a Hugging Face model
// directory holds, with its BOS/EOS ids.
//
// In a directory, the first that exists wins: tokenizer.json (byte-level
// BPE or SentencePiece style), tokenizer.model (SentencePiece), vocab.json +
// merges.txt (GPT-2's older pair); a tokenizer.json this reader cannot run
// (e.g. a Precompiled charsmap) gives way to a tokenizer.model beside it. A
// path names one of those directly.
//
// BOS/EOS come from (the directory's, or the file's directory's)
// generation_config.json, then config.json, then
// tokenizer_config.json's bos_token / eos_token names, then the tokenizer
// itself (SentencePiece's ids, tokenizer.json's post-processor template).
// add_bos follows tokenizer_config.json's add_bos_token when it says,
// otherwise whether the tokenizer's own template starts with BOS.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "text/tokenizer.h"

namespace pw {

// Blocks on reading the files. NotFound naming `path` and the files looked
// for; InvalidArgument naming the file and field of anything malformed or
// out of range (an EOS id past the vocabulary, an unknown tokenizer type).
Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path);

// Whether the directory `dir` holds a tokenizer LoadTokenizer would read.
bool HasTokenizerFiles(const std::string& dir);

// The files of `dir` that LoadTokenizer reads (the tokenizer files, and the
// configs that give BOS/EOS: tokenizer_config.json, special_tokens_map.json,
// generation_config.json, config.json), by name, those that exist.
std::vector<std::string> TokenizerFilesIn(const std::string& dir);

// The bundled byte-level GPT's tokenizer (id = byte).
std::unique_ptr<Tokenizer> MakeByteTokenizer();

// A model without tokenizer files served from token ids only
// (text/ids_only_tokenizer.h): `vocab_size` ids, BOS/EOS from `model_dir`'s
// config.json and generation_config.json when it has them ("" : none).
// InvalidArgument naming the file for an id out of range or given by name.
Result<std::unique_ptr<Tokenizer>> MakeIdsOnlyTokenizer(int64_t vocab_size, const std::string& model_dir);

}  // namespace pw
