// PagedKvCache: the keys and values of every running sequence, in
// fixed-size blocks of `block_size` token positions (vLLM's paging). Each
// sequence has a block table (its blocks in position order); blocks come
// from one free list, so sequences of any length share the pool without
// fragmentation, and a finished sequence's blocks are reused at once.
//
// Storage is allocated once, up front: per layer a K and a V tensor of
// [num_blocks, block_size, kv_width] in the cache's element type (kv_width =
// kv_heads x head width: d_model, or less with grouped-query attention), so the
// cache's bytes are exactly BytesFor(config, num_blocks, block_size, dtype)
// from construction on. fp32 (the default) keeps the model's own
// precision; fp16 stores each key and value rounded to half precision
// (round to nearest even, as at::Tensor::to(kHalf)): twice the positions
// per byte, and half the bytes decode attention streams, for an error of
// one fp16 rounding per cached value. int8 stores each row's heads
// (head_dim values of one position) as int8 with one fp32 scale per
// (position, head), the largest magnitude / 127, rounded to nearest: four
// times fp32's positions per byte (less the scales: kv_heads floats per
// row), for an error of at most half a step (scale / 2) per value.
// (A head-major block, [n_heads, block_size, head_dim], so that one head's
// keys are one contiguous run, measured no faster for decode attention:
// within 5 % alone, and the whole engine no faster side by side.)
//
// Held-back blocks (auto's swap, infer/memory_plan.h) are allocated with
// the stores but never written, so their pages cost no resident memory,
// and stay out of the free list until ReleaseHeldBack.
//
// Blocks are taken as a sequence grows (Reserve with a larger length adds
// only the missing ones), so a sequence holds just the blocks its written
// positions need; the engine decides what to do when none are free.
// Full blocks can be shared: with prefix caching (MapCachedPrefix /
// CommitPrefix, bookkept by infer/kv_blocks.h) a new sequence whose tokens
// start with blocks another sequence computed maps them, reference-counted,
// and they outlive their sequences until the pool needs them back.
//
// Readers reach the cache in place: keys(layer) / values(layer) are the
// stores and blocks(seq) the block table (infer/paged_attention.h walks
// them); Read gathers a copy for tests and tools.
//
// Thread-safety: one thread (the rank's engine). Failure: running out of
// blocks is a normal outcome (Reserve returns false); misuse (unknown
// sequence, writing past the reserved length) is a PW_CHECK.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "infer/kv_blocks.h"
#include "model/model_config.h"

namespace pw {

// Element type of the cache's keys and values.
enum class KvDtype { kFp32, kFp16, kInt8 };
int64_t KvElementBytes(KvDtype dtype);  // 4, 2 or 1 (int8's scales not counted)
const char* KvDtypeName(KvDtype dtype);  // "fp32", "fp16" or "int8"
// "fp32" / "fp16" / "int8"; InvalidArgument naming all three otherwise.
Result<KvDtype> ParseKvDtype(const std::string& name);

class PagedKvCache {
 public:
  // Bytes of one block over all layers, K and V:
  // 2 * n_layers * block_size * (kv_width * KvElementBytes(dtype) + int8's
  // scales, 4 * kv_heads).
  static int64_t BlockBytes(const ModelConfig& config, int block_size,
                            KvDtype dtype = KvDtype::kFp32);
  static int64_t BytesFor(const ModelConfig& config, int64_t num_blocks, int block_size,
                          KvDtype dtype = KvDtype::kFp32) {
    return num_blocks * BlockBytes(config, block_size, dtype);
  }

  // `held_back` blocks more are allocated but not usable until
  // ReleaseHeldBack (num_blocks() and bytes() count only usable blocks).
  PagedKvCache(const ModelConfig& config, int64_t num_blocks, int block_size,
               int64_t held_back = 0, KvDtype dtype = KvDtype::kFp32);

  // Makes up to `count` held-back blocks usable (they join the free list;
  // the rest stay held back, untouched); no-op when there are none. The
  // caller must have freed at least their bytes elsewhere (auto's weight
  // cache or serving reserve) to stay within its budget.
  void ReleaseHeldBack(int64_t count);
  int64_t held_back_blocks() const { return held_back_; }

  int64_t num_blocks() const;
  // Blocks Reserve can take: free ones and cached prefix blocks nobody
  // holds (evicted when taken).
  int64_t free_blocks() const;
  int block_size() const;
  int64_t capacity_tokens() const { return num_blocks() * block_size(); }
  int64_t bytes() const;  // == BytesFor(config, num_blocks, block_size, dtype)
  KvDtype dtype() const { return dtype_; }
  // Blocks a sequence of `tokens` positions needs.
  int64_t BlocksFor(int64_t tokens) const;

  // Ensures sequence `seq` (created on first use) has blocks for `tokens`
  // positions in total. False (and nothing allocated) when not enough free.
  bool Reserve(int64_t seq, int64_t tokens);
  // Drops `seq`'s blocks (no-op for an unknown sequence): those nobody else
  // holds become free, or stay cached when they are in the prefix index.
  void Release(int64_t seq);
  // Positions `seq` has blocks for (0 for an unknown sequence).
  int64_t reserved_tokens(int64_t seq) const;

  // Writes k, v ([n, kv_width] fp32) of `layer` at positions [start, start +
  // n), rounded to the cache's element type.
  void Write(int64_t seq, int layer, int64_t start, const at::Tensor& k, const at::Tensor& v);
  // The same from raw rows: row i of K at k + i * row_stride (kv_width
  // floats, unit stride), of V at v + i * row_stride. One memcpy (fp32),
  // one vector conversion (fp16) or one quantisation per head (int8) per
  // row.
  void WriteRows(int64_t seq, int layer, int64_t start, int64_t n, const float* k,
                 const float* v, int64_t row_stride);
  // The layer's stores, [num_blocks, block_size, kv_width] contiguous, of
  // the cache's element type (at::kFloat, at::kHalf or at::kChar).
  const at::Tensor& keys(int layer) const { return k_[layer]; }
  const at::Tensor& values(int layer) const { return v_[layer]; }
  // int8 only: the layer's scales, [num_blocks, block_size, kv_heads] fp32
  // contiguous (value = stored int8 * scale of its position and head);
  // undefined tensors for fp32 and fp16.
  const at::Tensor& key_scales(int layer) const { return k_scales_[layer]; }
  const at::Tensor& value_scales(int layer) const { return v_scales_[layer]; }
  // The block table of `seq` (position p lives in block blocks(seq)[p /
  // block_size]); valid until the next Reserve or Release of `seq`.
  const std::vector<int64_t>& blocks(int64_t seq) const;
  // K and V of `layer` for positions [0, length): [length, kv_width] fp32
  // each (gathered copies along the block table, widened from fp16 exactly,
  // int8 times its scale).
  std::pair<at::Tensor, at::Tensor> Read(int64_t seq, int layer, int64_t length) const;

  // Prefix caching (infer/kv_blocks.h has the rules). MapCachedPrefix maps
  // into new sequence `seq` the cached full blocks that start `tokens`,
  // within `max_tokens` positions, and returns the positions mapped: the
  // sequence computes only the rest. CommitPrefix indexes `seq`'s full
  // blocks within [0, n), whose keys and values are those of tokens[0, n)
  // by the end of the current forward pass. ForgetPrefixes empties the
  // index (after a failed pass).
  int64_t MapCachedPrefix(int64_t seq, const std::vector<int64_t>& tokens, int64_t max_tokens);
  void CommitPrefix(int64_t seq, const std::vector<int64_t>& tokens, int64_t n);
  void ForgetPrefixes() { blocks_.Forget(); }
  const PrefixCacheStats& prefix_stats() const { return blocks_.stats(); }

 private:
  ModelConfig config_;
  int block_size_;
  KvDtype dtype_;
  int64_t held_back_ = 0;
  std::vector<at::Tensor> k_, v_;                       // per layer
  std::vector<at::Tensor> k_scales_, v_scales_;         // per layer; int8 only
  KvBlockManager blocks_;  // block tables, free blocks, the prefix index
};

}  // namespace pw
