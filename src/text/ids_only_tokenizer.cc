#include "text/ids_only_tokenizer.h"

#include <string>

namespace pw {

Result<std::vector<int32_t>> IdsOnlyTokenizer::EncodeText(std::string_view text) const {
  (void)text;
  return Status::InvalidArgument(
      "this model has no tokenizer files, so prompts must be token ids (\"prompt_ids\": [...]); give its tokenizer "
      "with --tokenizer PATH to use text");
}

Result<std::string> IdsOnlyTokenizer::DecodeIds(std::span<const int32_t> /*ids*/, bool /*skip_special*/) const {
  return std::string();
}

}  // namespace pw
