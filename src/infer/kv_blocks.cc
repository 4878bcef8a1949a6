#include "infer/kv_blocks.h"

#include <algorithm>
#include <string>

#include "core/check.h"
#include "core/hash.h"

namespace pw {

size_t KvBlockManager::KeyHash::operator()(const Key& k) const {
  // Only for bucketing: the index compares whole keys.
  const uint64_t h = Fnv1a64(&k.parent, sizeof k.parent);
  return static_cast<size_t>(Fnv1a64(k.tokens.data(), k.tokens.size() * sizeof(int64_t), h));
}

KvBlockManager::KvBlockManager(int64_t num_blocks, int block_size) : block_size_(block_size) {
  PW_CHECK(num_blocks >= 0 && block_size > 0, "KvBlockManager: num_blocks >= 0, block_size > 0");
  AddBlocks(num_blocks);
}

void KvBlockManager::AddBlocks(int64_t n) {
  const int64_t first = num_blocks();
  refs_.resize(static_cast<size_t>(first + n), 0);
  lru_pos_.resize(refs_.size());
  key_of_.resize(refs_.size(), nullptr);
  // A stack popped from the back: the new blocks go under those free now
  // (already resident), in id order among themselves.
  std::vector<int64_t> added;
  for (int64_t b = first + n - 1; b >= first; --b) added.push_back(b);
  free_.insert(free_.begin(), added.begin(), added.end());
}

int64_t KvBlockManager::BlocksFor(int64_t tokens) const {
  return tokens <= 0 ? 0 : (tokens + block_size_ - 1) / block_size_;
}

// A free block, else the least recently released cached one (leaving the
// index). The caller checked that one is available.
int64_t KvBlockManager::TakeBlock() {
  if (!free_.empty()) {
    const int64_t b = free_.back();
    free_.pop_back();
    return b;
  }
  const int64_t b = lru_.front();
  lru_.pop_front();
  Unindex(b);
  ++stats_.evictions;
  return b;
}

void KvBlockManager::Unindex(int64_t block) {
  const Key* key = key_of_[static_cast<size_t>(block)];
  if (key == nullptr) return;
  key_of_[static_cast<size_t>(block)] = nullptr;
  index_.erase(*key);
  --stats_.cached_blocks;
}

bool KvBlockManager::Reserve(int64_t seq, int64_t tokens) {
  auto it = tables_.find(seq);
  const int64_t have = it == tables_.end() ? 0 : static_cast<int64_t>(it->second.blocks.size());
  const int64_t need = BlocksFor(tokens) - have;
  if (need > available_blocks()) return false;
  std::vector<int64_t>& table = tables_[seq].blocks;
  for (int64_t i = 0; i < need; ++i) {
    const int64_t b = TakeBlock();
    ++refs_[static_cast<size_t>(b)];
    table.push_back(b);
  }
  return true;
}

void KvBlockManager::Release(int64_t seq) {
  auto it = tables_.find(seq);
  if (it == tables_.end()) return;
  // Last block first: free blocks are reused from the stack's top, so the
  // sequence's first block goes out first; cached blocks are evicted from
  // the list's front, so its last (longest-prefix) block goes first.
  for (auto b = it->second.blocks.rbegin(); b != it->second.blocks.rend(); ++b) {
    const size_t i = static_cast<size_t>(*b);
    if (--refs_[i] > 0) continue;
    if (key_of_[i] != nullptr) {
      lru_pos_[i] = lru_.insert(lru_.end(), *b);
    } else {
      free_.push_back(*b);
    }
  }
  tables_.erase(it);
}

const std::vector<int64_t>& KvBlockManager::blocks(int64_t seq) const {
  auto it = tables_.find(seq);
  PW_CHECK(it != tables_.end(), "KvBlockManager::blocks: unknown sequence " + std::to_string(seq));
  return it->second.blocks;
}

int64_t KvBlockManager::MapCachedPrefix(int64_t seq, const std::vector<int64_t>& tokens, int64_t max_tokens) {
  PW_CHECK(tables_.count(seq) == 0 || tables_[seq].blocks.empty(),
           "KvBlockManager::MapCachedPrefix: sequence " + std::to_string(seq) + " already has blocks");
  Table& table = tables_[seq];
  const int64_t limit = std::min<int64_t>(max_tokens, static_cast<int64_t>(tokens.size()));
  Key key;
  for (int64_t start = 0; start + block_size_ <= limit; start += block_size_) {
    key.parent = table.last_serial;
    key.tokens.assign(tokens.begin() + start, tokens.begin() + start + block_size_);
    auto hit = index_.find(key);
    if (hit == index_.end()) break;
    const size_t b = static_cast<size_t>(hit->second.block);
    if (refs_[b]++ == 0) lru_.erase(lru_pos_[b]);  // an indexed block nobody held is cached
    table.blocks.push_back(hit->second.block);
    table.last_serial = hit->second.serial;
    ++table.committed;
  }
  return table.committed * block_size_;
}

void KvBlockManager::Commit(int64_t seq, const std::vector<int64_t>& tokens, int64_t n) {
  auto it = tables_.find(seq);
  PW_CHECK(it != tables_.end(), "KvBlockManager::Commit: unknown sequence " + std::to_string(seq));
  Table& table = it->second;
  if (!table.indexed) return;
  PW_CHECK(n <= static_cast<int64_t>(tokens.size()) &&
               BlocksFor(n) <= static_cast<int64_t>(table.blocks.size()),
           "KvBlockManager::Commit: positions past the sequence's tokens or blocks");
  const int64_t full = n / block_size_;
  for (int64_t i = table.committed; i < full; ++i) {
    Key key;
    key.parent = table.last_serial;
    key.tokens.assign(tokens.begin() + i * block_size_, tokens.begin() + (i + 1) * block_size_);
    auto [entry, added] = index_.try_emplace(std::move(key));
    if (added) {
      const int64_t b = table.blocks[static_cast<size_t>(i)];
      entry->second = {b, next_serial_++};
      key_of_[static_cast<size_t>(b)] = &entry->first;
      ++stats_.cached_blocks;
    }
    // An equal block indexed before: this copy stays private, and the
    // chain goes on from the indexed one's identity.
    table.last_serial = entry->second.serial;
    table.committed = i + 1;
  }
}

void KvBlockManager::Forget() {
  for (int64_t b : lru_) free_.push_back(b);
  lru_.clear();
  for (const Key*& key : key_of_) key = nullptr;
  index_.clear();
  stats_.cached_blocks = 0;
  // Their blocks' identities are gone: the running sequences index nothing
  // more (a later block keyed on a lost parent would claim position 0).
  for (auto& entry : tables_) entry.second.indexed = false;
}

}  // namespace pw
