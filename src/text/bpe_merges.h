// BpeMerges: a BPE model's merge rules over token ids, applied the way
// Hugging Face's tokenizers do (lowest rank first, leftmost on a tie). Both
// BPE kinds share it: byte-level (byte_level_bpe.h) and SentencePiece-style
// (piece_tokenizer.h), which differ only in what the first symbols are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace pw {

class BpeMerges {
 public:
  // The rules, by priority (index 0 first): {left, right, merged} ids. A
  // pair given twice keeps its first (highest-priority) rank.
  struct Rule {
    int32_t left, right, merged;
  };
  explicit BpeMerges(const std::vector<Rule>& rules = {});

  // The rules of merges written as token names (tokenizer.json's
  // model.merges, highest priority first); `id_of` gives a name's id, or -1.
  // InvalidArgument naming `source` and the first merge whose parts or
  // result the vocabulary lacks.
  static Result<BpeMerges> FromNames(const std::vector<std::pair<std::string, std::string>>& merges,
                                     const std::function<int32_t(const std::string&)>& id_of,
                                     const std::string& source);

  // Merges `symbols` in place until no rule applies, as Hugging Face's BPE
  // does for any table: the lowest-ranked adjacent pair first, the leftmost
  // on a tie. O(n log n) in the symbols.
  void Merge(std::vector<int32_t>& symbols) const;

  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key;  // left id << 32 | right id; kEmpty when free
    int32_t rank, merged;
  };
  // The slot of `key`, or null. Open addressing with linear probing: one
  // cache miss per lookup on tables of 500k rules, where a node-based map
  // costs two or more — the merge loop is made of these lookups.
  const Slot* Find(uint64_t key) const;

  std::vector<Slot> slots_;  // a power of two, at most half full
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace pw
