#include "text/ids_only_tokenizer.h"

#include <string>

namespace pw {

Result<std::vector<int32_t>> IdsOnlyTokenizer::Encode(std::string_view text) const {
  (void)text;
  return Status::InvalidArgument(
      "this model has no tokenizer files, so prompts must be token ids (\"prompt_ids\": [...]); give its tokenizer "
      "with --tokenizer PATH to use text");
}

Result<std::string> IdsOnlyTokenizer::Decode(std::span<const int32_t> ids, bool /*skip_special*/) const {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size_) {
      return Status::InvalidArgument("id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                                     " is outside the vocabulary of " + std::to_string(vocab_size_));
    }
  }
  return std::string();
}

}  // namespace pw
