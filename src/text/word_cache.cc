#include "text/word_cache.h"

namespace pw {

bool WordCache::Lookup(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > kMaxWordBytes) return false;
  std::lock_guard lock(mu_);
  auto it = words_.find(word);
  if (it == words_.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void WordCache::Insert(std::string_view word, const std::vector<int32_t>& ids) {
  if (word.size() > kMaxWordBytes) return;
  std::lock_guard lock(mu_);
  if (words_.size() >= capacity_) return;
  words_.emplace(std::string(word), ids);
}

}  // namespace pw
