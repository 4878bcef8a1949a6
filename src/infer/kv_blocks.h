// KvBlockManager: which KV cache block belongs to which sequence, and the
// prefix cache — the bookkeeping half of PagedKvCache (infer/kv_cache.h),
// apart from the tensors so it can be reasoned about and tested alone.
//
// Blocks are ids [0, num_blocks). A sequence's block table lists its
// blocks in position order. A block is in one of three states:
//   - free: nobody holds it and it remembers nothing;
//   - held: one or more sequences have it in their tables (reference
//     counted: a cached prefix block is held by every sequence mapping it);
//   - cached: nobody holds it but it is in the prefix index, so a later
//     sequence with the same prefix maps it instead of computing it again.
// Taking blocks (Reserve) uses free ones first, then evicts cached ones,
// least recently released first (and, among blocks released together, the
// sequence's last block first, so a prefix outlives its extensions).
//
// The prefix index (vLLM's automatic prefix caching) is content-addressed
// and exact: a full block is keyed by its block_size tokens and the
// identity of the prefix before it (the key of the block before, by a
// serial number never reused), so a hit means the same tokens at the same
// positions after the same prefix — no hash collision can map the wrong
// keys and values. Only full blocks are indexed, and a sequence maps a
// cached prefix only into a new table, so no sequence ever writes a block
// another holds: sharing needs no copy-on-write (the first block where two
// prompts differ is each one's own). When two sequences compute the same
// block at once, the first committed is indexed; the other's copy stays
// private and is freed with it.
//
// Contract with the writer: Commit(seq, tokens, n) promises that the keys
// and values of positions [0, n) of `seq` are (or, within the current
// forward pass, will be before anything reads them) those of `tokens` —
// a sequence that maps a block committed in the same pass reads it only
// after every chunk's keys and values of that layer are written
// (infer/decoder.h). Forget drops the whole index (after a failed pass,
// whose blocks may be half written).
//
// Thread-safety: one thread. Misuse (mapping into a sequence that has
// blocks, committing past the table) is a PW_CHECK.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace pw {

struct PrefixCacheStats {
  int64_t cached_blocks = 0;  // blocks in the index now (held or not)
  int64_t evictions = 0;      // cached blocks taken back for other use
};

class KvBlockManager {
 public:
  KvBlockManager(int64_t num_blocks, int block_size);

  // Adds blocks [num_blocks, num_blocks + n) as free, taken after the
  // blocks free now.
  void AddBlocks(int64_t n);

  int64_t num_blocks() const { return static_cast<int64_t>(refs_.size()); }
  int block_size() const { return block_size_; }
  // Blocks Reserve can take: free and cached (evictable) ones.
  int64_t available_blocks() const { return static_cast<int64_t>(free_.size() + lru_.size()); }
  int64_t BlocksFor(int64_t tokens) const;

  // Ensures `seq` (created on first use) has blocks for `tokens` positions.
  // False, and nothing taken, when not enough are available.
  bool Reserve(int64_t seq, int64_t tokens);
  // Drops `seq`'s hold on its blocks (no-op for an unknown sequence): a
  // block nobody holds becomes cached if indexed, else free.
  void Release(int64_t seq);
  bool Has(int64_t seq) const { return tables_.count(seq) > 0; }
  const std::vector<int64_t>& blocks(int64_t seq) const;  // PW_CHECKs that seq exists

  // Maps into new sequence `seq` the longest run of indexed full blocks
  // that starts `tokens`, covering at most `max_tokens` positions; returns
  // the positions mapped (a multiple of block_size, possibly 0; `seq`
  // exists afterwards either way). The mapped blocks count as committed.
  int64_t MapCachedPrefix(int64_t seq, const std::vector<int64_t>& tokens, int64_t max_tokens);
  // Indexes `seq`'s full blocks within positions [0, n), whose keys and
  // values are those of tokens[0, n) (see the contract above). Blocks
  // committed before are skipped, so calling it every pass is cheap.
  void Commit(int64_t seq, const std::vector<int64_t>& tokens, int64_t n);
  // Empties the index: cached blocks become free; held ones stay held but
  // are never mapped again.
  void Forget();

  const PrefixCacheStats& stats() const { return stats_; }

 private:
  struct Key {
    uint64_t parent = 0;           // serial of the block before (0: none)
    std::vector<int64_t> tokens;   // block_size tokens
    bool operator==(const Key& o) const { return parent == o.parent && tokens == o.tokens; }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };
  struct Table {
    std::vector<int64_t> blocks;
    int64_t committed = 0;   // leading blocks whose content identity is known
    uint64_t last_serial = 0;  // that of block committed - 1 (0: none)
    bool indexed = true;       // false once Forget dropped its chain
  };
  struct Entry {
    int64_t block = 0;
    uint64_t serial = 0;
  };

  int64_t TakeBlock();
  void Unindex(int64_t block);

  int block_size_;
  std::vector<int64_t> free_;   // a stack: taken from the back
  std::list<int64_t> lru_;      // cached blocks nobody holds, evicted from the front
  std::vector<int> refs_;       // per block: tables holding it
  // Valid while in lru_: while the block is indexed and nobody holds it.
  std::vector<std::list<int64_t>::iterator> lru_pos_;
  std::vector<const Key*> key_of_;  // per block: its index key, or null
  std::unordered_map<Key, Entry, KeyHash> index_;
  std::unordered_map<int64_t, Table> tables_;
  uint64_t next_serial_ = 1;
  PrefixCacheStats stats_;
};

}  // namespace pw
