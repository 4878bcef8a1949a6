// IdsOnlyTokenizer: the stand-in for a model served without tokenizer files
// when every prompt comes as token ids (vLLM's skip_tokenizer_init). It
// knows the vocabulary's size and, from the model's config.json and
// generation_config.json, its BOS/EOS ids; it has no text: Encode refuses
// with what to give instead, and Decode gives "" (results carry the ids).
#pragma once

#include "text/tokenizer.h"

namespace pw {

class IdsOnlyTokenizer final : public Tokenizer {
 public:
  explicit IdsOnlyTokenizer(int64_t vocab_size) : vocab_size_(vocab_size) {}
  std::optional<int32_t> TokenId(const std::string&) const override { return std::nullopt; }
  int64_t vocab_size() const override { return vocab_size_; }
  std::string_view kind() const override { return "ids"; }


 protected:
  Result<std::vector<int32_t>> EncodeText(std::string_view text) const override;
  Result<std::string> DecodeIds(std::span<const int32_t> ids, bool skip_special) const override;
  bool EncodesUtf8Only() const override { return false; }
 private:
  int64_t vocab_size_;
};

}  // namespace pw
