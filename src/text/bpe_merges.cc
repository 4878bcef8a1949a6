#include "text/bpe_merges.h"

#include <bit>
#include <functional>
#include <queue>

namespace pw {
namespace {

// Pieces of more symbols than this merge with a heap.
constexpr size_t kLongPiece = 24;

constexpr uint64_t kEmpty = ~uint64_t{0};  // ids are below 2^31: no pair has this key

uint64_t PairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace

BpeMerges::BpeMerges(const std::vector<Rule>& rules) {
  size_t capacity = 16;
  while (capacity < 2 * rules.size()) capacity *= 2;
  slots_.assign(capacity, Slot{kEmpty, 0, 0});
  shift_ = 64 - std::countr_zero(capacity);
  for (size_t rank = 0; rank < rules.size(); ++rank) {
    const uint64_t key = PairKey(rules[rank].left, rules[rank].right);
    for (size_t i = (key * 0x9E3779B97F4A7C15ull) >> shift_;; i = (i + 1) & (capacity - 1)) {
      if (slots_[i].key == key) break;  // a repeated pair keeps its first rank
      if (slots_[i].key == kEmpty) {
        slots_[i] = Slot{key, static_cast<int32_t>(rank), rules[rank].merged};
        ++size_;
        break;
      }
    }
  }
}

Result<BpeMerges> BpeMerges::FromNames(const std::vector<std::pair<std::string, std::string>>& merges,
                                       const std::function<int32_t(const std::string&)>& id_of,
                                       const std::string& source) {
  std::vector<Rule> rules;
  rules.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const Rule rule{id_of(left), id_of(right), id_of(left + right)};
    if (rule.left < 0 || rule.right < 0 || rule.merged < 0) {
      return Status::InvalidArgument(source + ": merge " + std::to_string(rank + 1) + " ('" + left + "' '" + right +
                                     "') names a token the vocabulary lacks");
    }
    rules.push_back(rule);
  }
  return BpeMerges(rules);
}

const BpeMerges::Slot* BpeMerges::Find(uint64_t key) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = (key * 0x9E3779B97F4A7C15ull) >> shift_;; i = (i + 1) & mask) {
    if (slots_[i].key == key) return &slots_[i];
    if (slots_[i].key == kEmpty) return nullptr;
  }
}

void BpeMerges::Merge(std::vector<int32_t>& symbols) const {
  // Hugging Face's merge_all: a heap of candidate pairs by (rank, position);
  // merged in place in a linked list; entries whose symbols changed since
  // they were queued are skipped.
  struct Entry {
    int32_t rank, pos, left, right, merged;
    bool operator>(const Entry& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  const int n = static_cast<int>(symbols.size());
  if (n < 2) return;
  std::vector<int> prev(n), next(n);
  for (int i = 0; i < n; ++i) prev[i] = i - 1, next[i] = i + 1 < n ? i + 1 : -1;
  std::vector<Entry> storage;
  storage.reserve(static_cast<size_t>(n));
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap(std::greater<Entry>(), std::move(storage));
  auto push = [&](int pos) {
    if (pos < 0 || next[pos] < 0) return;
    if (const Slot* rule = Find(PairKey(symbols[pos], symbols[next[pos]]))) {
      heap.push({rule->rank, pos, symbols[pos], symbols[next[pos]], rule->merged});
    }
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  constexpr int32_t kGone = -1;  // a symbol merged into its left neighbour
  while (!heap.empty()) {
    const Entry e = heap.top();
    heap.pop();
    const int right = next[e.pos];
    if (symbols[e.pos] != e.left || right < 0 || symbols[right] != e.right) continue;
    symbols[e.pos] = e.merged;
    symbols[right] = kGone;
    next[e.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = e.pos;
    push(prev[e.pos]);
    push(e.pos);
  }
  size_t kept = 0;
  for (int i = 0; i >= 0; i = next[i]) symbols[kept++] = symbols[i];
  symbols.resize(kept);
}

}  // namespace pw
