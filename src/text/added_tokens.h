// AddedTokens: the tokens a tokenizer.json matches literally in the input
// before anything else runs ("<|endoftext|>", "<s>", a model's control and
// user-defined symbols). Text between them is encoded by the model; the
// tokens themselves become their ids. Shared by both tokenizer.json kinds.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pw {

// A token matched literally in the input before any splitting.
struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;  // Decode(skip_special) drops it
  bool lstrip = false;   // swallows the whitespace on its left
  bool rstrip = false;   // swallows the whitespace on its right
};

class AddedTokens {
 public:
  AddedTokens() = default;
  // InvalidArgument naming `source` for an empty or non-UTF-8 token.
  static Result<AddedTokens> Create(std::vector<AddedToken> tokens, const std::string& source);

  // Cuts `text` at added tokens, longest match first: calls `ordinary`
  // with each non-empty stretch between them (and the byte offset where it
  // starts in `text`), and appends each added token's id to `out` in place.
  using OrdinaryText = std::function<Status(std::string_view text, size_t offset)>;
  Status Split(std::string_view text, std::vector<int32_t>& out, const OrdinaryText& ordinary) const;

  // The added token with this id, or null.
  const AddedToken* Find(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < index_.size() && index_[id] >= 0 ? &tokens_[index_[id]] : nullptr;
  }
  std::optional<int32_t> IdOf(std::string_view content) const;
  // One past the largest id, 0 when there are none.
  int32_t id_limit() const { return static_cast<int32_t>(index_.size()); }
  const std::vector<AddedToken>& all() const { return tokens_; }

 private:
  std::vector<AddedToken> tokens_;                  // longest first
  std::vector<int32_t> index_;                      // id → index into tokens_, or -1
  std::vector<std::vector<int32_t>> by_first_byte_; // byte → indices, longest first
};

}  // namespace pw
