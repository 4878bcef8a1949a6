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
  Result<std::vector<int32_t>> Encode(std::string_view text) const override;
  Result<std::string> Decode(std::span<const int32_t> ids, bool skip_special = false) const override;
  std::optional<int32_t> TokenId(const std::string&) const override { return std::nullopt; }
  int64_t vocab_size() const override { return vocab_size_; }
  std::string_view kind() const override { return "ids"; }

 private:
  int64_t vocab_size_;
};

}  // namespace pw
