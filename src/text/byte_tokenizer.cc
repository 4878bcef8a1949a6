#include "text/byte_tokenizer.h"

namespace pw {

Result<std::vector<int32_t>> ByteTokenizer::EncodeText(std::string_view text) const {
  std::vector<int32_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<uint8_t>(text[i]);
  return ids;
}

Result<std::string> ByteTokenizer::DecodeIds(std::span<const int32_t> ids, bool /*skip_special*/) const {
  std::string text(ids.size(), '\0');
  for (size_t i = 0; i < ids.size(); ++i) text[i] = static_cast<char>(ids[i]);
  return text;
}

}  // namespace pw
