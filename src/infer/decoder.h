// One forward pass of the decoder over a batch of sequence chunks with the
// paged KV cache: each chunk is some new tokens of one sequence (a whole or
// partial prompt when prefilling, one token when decoding) at positions
// [start, start + n). Every layer runs the pool's PreAttention on all rows
// at once, writes each chunk's keys and values into the cache, attends every
// chunk's queries causally over its sequence's cached positions
// [0, start + n) in one call (infer/paged_attention.h: the cache read in
// place through the block tables; the same numbers as training's
// model/gpt_math.h CausalAttention to fp32 rounding), then runs the pool's
// PostAttention on all rows. The head runs only on each
// chunk's last row: the logits that choose the sequence's next token.
//
// Thread-safety: one thread (the engine's). Failure: InvalidArgument for a
// bad chunk (empty, positions beyond seq_len, token outside the vocabulary,
// positions without reserved cache blocks), checked before anything runs;
// a pool Status (a peer died) mid-pass, after which the pool and the
// chunks' cache contents are unusable.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "infer/kv_cache.h"
#include "infer/model_weights.h"
#include "infer/weight_pool.h"

namespace pw {

struct SequenceChunk {
  int64_t seq = 0;              // the sequence's id in the KV cache
  std::vector<int64_t> tokens;  // new tokens (at least one)
  int64_t start = 0;            // position of tokens[0]; [0, start) is already cached
};

// Runs one pass (pool.BeginPass(rows) ... pool.EndPass()) and returns the
// logits of each chunk's last token: float [chunks.size(), vocab], in chunk
// order. `weights` supplies the embedding and the head; the cache must have
// blocks reserved for every chunk's positions. Adds the seconds spent in
// attention (the new keys and values written, then PagedAttention, every
// layer) to *attention_seconds when given. Blocks while computing.
Result<at::Tensor> ForwardChunks(const ModelWeights& weights, WeightPool& pool,
                                 PagedKvCache& cache, const std::vector<SequenceChunk>& chunks,
                                 double* attention_seconds = nullptr);

// The model arithmetic of that pass, in FLOPs (a multiply-add is 2): every
// Linear of every block over all rows, causal attention (QK^T and AV over
// the keys each row sees) and the head over each chunk's last row — what
// the pass must compute whatever the implementation, so FLOPs / seconds
// against the core's GEMM rate says how close a pass runs to the machine.
// LayerNorm, GELU, softmax and the embedding are left out (a few % of it).
double PassFlops(const ModelConfig& config, const std::vector<SequenceChunk>& chunks);

}  // namespace pw
