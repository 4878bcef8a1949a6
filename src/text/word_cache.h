// WordCache: the ids of words (pre-tokenized pieces) already encoded, shared
// by every thread that encodes with one tokenizer. Bounded the way Hugging
// Face's tokenizers bound theirs: words longer than kMaxWordBytes are never
// kept (they rarely repeat), and a full cache keeps what it holds rather than
// starting over, so the common words, met first, stay.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

#include "text/string_map.h"

namespace pw {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 256;

  explicit WordCache(size_t capacity = size_t{1} << 18) : capacity_(capacity) {}

  // Appends the cached ids of `word` to `out`; false when it is not cached.
  bool Lookup(std::string_view word, std::vector<int32_t>& out) const;
  // Keeps `ids` for `word`, unless the word is too long or the cache full.
  void Insert(std::string_view word, const std::vector<int32_t>& ids);

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  StringMap<std::vector<int32_t>> words_;
};

}  // namespace pw
