// The arithmetic of one decoder step, split where the weights are: a block
// is PreAttention (LN1 + QKV projection: needs weights), attention over the
// sequence's cached keys and values (needs the KV cache, stays on the rank
// that owns the sequence), and PostAttention (output projection, residual,
// LN2, MLP, residual: needs weights). Compute-as-a-service ships exactly the
// inputs of the two weight-bearing parts to the block's owner.
//
// Numerics follow model/gpt.h Block::Forward (same ops, same order), so an
// incremental decode reproduces the full-sequence forward up to float
// rounding. Rows are token positions of any sequences, flattened: [N, d].
//
// Thread-safety: pure functions (no autograd: callers hold a NoGradGuard or
// InferenceMode).
#pragma once

#include <ATen/core/Tensor.h>

#include "infer/model_weights.h"

namespace pw {

// tokens int64 [N], positions int64 [N] -> [N, d].
at::Tensor Embed(const ModelWeights& weights, const at::Tensor& tokens,
                 const at::Tensor& positions);
// x [N, d] -> qkv [N, 3d].
at::Tensor PreAttention(const BlockWeights& block, const at::Tensor& x);
// x [N, d] (the block's input), attended [N, d] -> the block's output [N, d].
at::Tensor PostAttention(const BlockWeights& block, const at::Tensor& x,
                         const at::Tensor& attended);
// x [N, d] -> logits [N, vocab].
at::Tensor HeadLogits(const ModelWeights& weights, const at::Tensor& x);

}  // namespace pw
