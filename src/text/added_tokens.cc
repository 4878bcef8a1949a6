#include "text/added_tokens.h"

#include <algorithm>

#include "text/utf8.h"

namespace pw {
namespace {

bool IsAsciiSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

Result<AddedTokens> AddedTokens::Create(std::vector<AddedToken> tokens, const std::string& source) {
  AddedTokens added;
  int32_t limit = 0;
  for (const AddedToken& token : tokens) {
    if (token.content.empty()) return Status::InvalidArgument(source + ": added token " + std::to_string(token.id) + " is empty");
    if (FirstInvalidUtf8(token.content)) {
      return Status::InvalidArgument(source + ": added token " + std::to_string(token.id) + " is not valid UTF-8");
    }
    if (token.id < 0) return Status::InvalidArgument(source + ": added token '" + token.content + "' has a negative id");
    limit = std::max(limit, token.id + 1);
  }
  // Longest first, so "<|end|>" never wins over "<|endoftext|>" at one position.
  std::stable_sort(tokens.begin(), tokens.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  added.tokens_ = std::move(tokens);
  added.index_.assign(static_cast<size_t>(limit), -1);
  added.by_first_byte_.resize(256);
  for (size_t i = 0; i < added.tokens_.size(); ++i) {
    added.index_[added.tokens_[i].id] = static_cast<int32_t>(i);
    added.by_first_byte_[static_cast<uint8_t>(added.tokens_[i].content[0])].push_back(static_cast<int32_t>(i));
  }
  return added;
}

std::optional<int32_t> AddedTokens::IdOf(std::string_view content) const {
  for (const AddedToken& token : tokens_) {
    if (token.content == content) return token.id;
  }
  return std::nullopt;
}

Status AddedTokens::Split(std::string_view text, std::vector<int32_t>& out, const OrdinaryText& ordinary) const {
  size_t segment = 0;  // start of the text not yet encoded
  size_t i = 0;
  auto flush = [&](size_t end) -> Status {
    if (end > segment) return ordinary(text.substr(segment, end - segment), segment);
    return Status::Ok();
  };
  while (i < text.size()) {
    const AddedToken* hit = nullptr;
    if (!tokens_.empty()) {
      for (int32_t index : by_first_byte_[static_cast<uint8_t>(text[i])]) {
        if (text.compare(i, tokens_[index].content.size(), tokens_[index].content) == 0) {
          hit = &tokens_[index];
          break;
        }
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    size_t before_end = i;
    if (hit->lstrip) {
      while (before_end > segment && IsAsciiSpace(text[before_end - 1])) --before_end;
    }
    PW_RETURN_IF_ERROR(flush(before_end));
    out.push_back(hit->id);
    i += hit->content.size();
    if (hit->rstrip) {
      while (i < text.size() && IsAsciiSpace(text[i])) ++i;
    }
    segment = i;
  }
  return flush(text.size());
}

}  // namespace pw
