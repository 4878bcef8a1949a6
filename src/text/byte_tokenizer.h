// ByteTokenizer: the bundled byte-level GPT's tokenizer. Every byte is its
// own token, so any byte string (valid UTF-8 or not) round-trips.
#pragma once

#include "text/tokenizer.h"

namespace pw {

// The byte-level GPT's tokenizer: id = byte, vocabulary 256, no specials.
class ByteTokenizer final : public Tokenizer {
 public:
  std::optional<int32_t> TokenId(const std::string&) const override { return std::nullopt; }
  int64_t vocab_size() const override { return 256; }
  std::optional<std::string> TokenBytes(int32_t id) const override {
    if (id < 0 || id >= 256) return std::nullopt;
    return std::string(1, static_cast<char>(static_cast<unsigned char>(id)));
  }
  bool EncodesNewlineCutsAlike() const override { return true; }
  std::string_view kind() const override { return "byte"; }

 protected:
  Result<std::vector<int32_t>> EncodeText(std::string_view text) const override;
  Result<std::string> DecodeIds(std::span<const int32_t> ids, bool skip_special) const override;
  bool EncodesUtf8Only() const override { return false; }
};

}  // namespace pw
