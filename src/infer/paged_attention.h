// Causal attention of a whole forward pass's query rows over the paged KV
// cache, read in place through each sequence's block table: no per-sequence
// gather of the K/V history, no padding, one call per layer for every
// sequence of the pass (prefill and decode rows together).
//
// A chunk is `n` query rows of one sequence at positions [start, start + n)
// (rows [row, row + n) of q and out); query i sees the sequence's keys
// 0 .. start + i — what model/gpt_math.h CausalAttention computes over the
// gathered history, to fp32 rounding (the softmax is the model's own row
// kernel, model/fused_row_kernels.h; summation orders differ).
//
// Kernel: per query row, all heads at once: scores q·k over the visible
// keys block by block, each key row read once for every head (AVX2+FMA,
// four heads per reduction, when the head width is a multiple of 8; on
// AVX-512 CPUs sixteen (key, head) products per reduction when the head
// count divides 16 and the head width is a multiple of 16; scalar loops
// head by head otherwise or on CPUs without AVX2), the softmax of each head
// in place, then the weighted sum of V, again row by row (on AVX-512 CPUs,
// when d is a multiple of 256 and the head width of 16, with the output
// row held in registers across the walk). The vector paths prefetch: the
// walk over keys asks for the matching value rows, the walk over values for
// the next query row's keys, so memory is read while the previous rows
// compute. Work is split over query rows (at::parallel_for), never inside
// a sum, so results do not depend on the thread count.
//
// Thread-safety: a pure function of its inputs; the cache must not be
// written while it runs. Failure: misuse (shapes, rows out of range) is a
// PW_CHECK.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace pw {

struct PagedChunk {
  const int64_t* blocks = nullptr;  // the sequence's block table (>= BlocksFor(start + n))
  int64_t start = 0;                // position of the first query row
  int64_t n = 0;                    // query rows
  int64_t row = 0;                  // first row in q / out
};

// q: [rows, d] fp32 with unit column stride (a slice of the fused QKV
// projection is fine); k_store, v_store: one layer's cache,
// [num_blocks, block_size, kv_width] contiguous, both fp32, both fp16 or
// both int8 (widened to fp32 as they are read; every sum in fp32), with
// kv_width = kv_heads x head width: grouped-query attention reads key/value
// head h / (n_heads / kv_heads) for query head h straight from the cache,
// never expanded (kv_width = d: one per query head); for int8, k_scales and
// v_scales: [num_blocks, block_size, kv_heads] fp32 contiguous
// (infer/kv_cache.h), ignored otherwise. Returns [rows, d] (rows not
// covered by a chunk are left uninitialised). Blocks while computing.
at::Tensor PagedAttention(const at::Tensor& q, const at::Tensor& k_store,
                          const at::Tensor& v_store, const std::vector<PagedChunk>& chunks,
                          int n_heads, const at::Tensor& k_scales = {}, const at::Tensor& v_scales = {});

}  // namespace pw
