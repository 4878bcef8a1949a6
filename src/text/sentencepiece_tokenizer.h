// SentencePieceTokenizer: a model's tokenizer.model (Llama 2, Mistral, …)
// through Debian's libsentencepiece, the library that wrote such files.
// The library is reached through libpw_sentencepiece.so, loaded on first
// use with its symbols kept to itself (sentencepiece_plugin.h says why).
#pragma once

#include <memory>
#include <string>

#include "text/tokenizer.h"

namespace pw {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Loads `path`. NotFound / InvalidArgument with the library's reason
  // naming the file; FailedPrecondition when libpw_sentencepiece.so cannot
  // be loaded (the message names where it was looked for). special(): the
  // model's own bos/eos, add_bos true.
  static Result<std::unique_ptr<SentencePieceTokenizer>> Load(const std::string& path);
  ~SentencePieceTokenizer() override;

  int64_t vocab_size() const override;
  std::string_view kind() const override { return "sentencepiece"; }
  std::optional<int32_t> TokenId(const std::string& token) const override;


 protected:
  Result<std::vector<int32_t>> EncodeText(std::string_view text) const override;
  Result<std::string> DecodeIds(std::span<const int32_t> ids, bool skip_special) const override;
 private:
  struct Plugin;
  SentencePieceTokenizer(const Plugin& plugin, void* processor) : plugin_(plugin), processor_(processor) {}
  const Plugin& plugin_;
  void* processor_;  // owned; freed through the plugin
};

}  // namespace pw
