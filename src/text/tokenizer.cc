#include "text/tokenizer.h"

#include "text/utf8.h"

namespace pw {

Result<std::vector<int32_t>> Tokenizer::Encode(std::string_view text) const {
  if (EncodesUtf8Only()) {
    if (auto bad = FirstInvalidUtf8(text)) {
      return Status::InvalidArgument("text is not valid UTF-8 at byte " + std::to_string(*bad) +
                                     "; convert it to UTF-8 first (e.g. iconv -t UTF-8)");
    }
  }
  return EncodeText(text);
}

Result<std::string> Tokenizer::Decode(std::span<const int32_t> ids, bool skip_special) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size()) {
      return Status::InvalidArgument("token " + std::to_string(i) + " has id " + std::to_string(ids[i]) +
                                     ", which this vocabulary of " + std::to_string(vocab_size()) + " ids lacks");
    }
  }
  return DecodeIds(ids, skip_special);
}

}  // namespace pw
