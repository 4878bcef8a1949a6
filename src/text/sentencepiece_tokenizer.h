// SentencePieceTokenizer: a model's tokenizer.model (Llama 2, Mistral, …)
// through Debian's libsentencepiece, the library that wrote such files.
#pragma once

#include <memory>
#include <string>

#include "text/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace pw {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Loads `path`. NotFound / InvalidArgument with the library's reason
  // naming the file. special(): the model's own bos/eos, add_bos true.
  static Result<std::unique_ptr<SentencePieceTokenizer>> Load(const std::string& path);
  ~SentencePieceTokenizer() override;

  Result<std::vector<int32_t>> Encode(std::string_view text) const override;
  Result<std::string> Decode(std::span<const int32_t> ids, bool skip_special = false) const override;
  int64_t vocab_size() const override;
  std::string_view kind() const override { return "sentencepiece"; }

  // The id of `piece`, when the model has it.
  std::optional<int32_t> TokenId(const std::string& token) const override;

 private:
  SentencePieceTokenizer();
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

}  // namespace pw
