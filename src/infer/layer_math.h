// Inference's binding of the model's arithmetic (model/gpt_math.h, shared
// with training) to the weights it holds (infer/model_weights.h): the
// embedding, the head, and a block's two weight-bearing parts —
// PreAttention (LN1 + QKV projection) and PostAttention (output projection,
// residual, LN2, MLP, residual). They are the weight pool's unit of work:
// compute-as-a-service ships exactly their inputs to the block's owner,
// which runs them here on its weights; attention (model/gpt_math.h
// CausalAttention over the KV cache) stays on the rank that owns the
// sequence (infer/decoder.h). Plain linears (no split backward), no dropout.
// Rows are token positions of any sequences, flattened: [N, d].
//
// A block whose linears are prepacked (BlockWeights::prepacked) runs them
// on oneDNN with the bias, GELU and residual inside each matmul
// (infer/prepacked_linear.h): the same arithmetic to fp32 rounding.
//
// Thread-safety: pure functions (no autograd: callers hold a NoGradGuard or
// InferenceMode), except PrepackBlock, which writes the block it is given.
// Shape errors throw c10::Error.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "infer/model_weights.h"

namespace pw {

// tokens int64 [N], positions int64 [N] -> [N, d].
at::Tensor Embed(const ModelWeights& weights, const at::Tensor& tokens,
                 const at::Tensor& positions);
// x [N, d] -> qkv [N, 3d] (model/gpt_math.h BlockQkv).
at::Tensor PreAttention(const BlockWeights& block, const at::Tensor& x);
// x [N, d] (the block's input), attended [N, d] -> the block's output [N, d]
// (model/gpt_math.h BlockOutput).
at::Tensor PostAttention(const BlockWeights& block, const at::Tensor& x,
                         const at::Tensor& attended);
// x [N, d] -> logits [N, vocab].
at::Tensor HeadLogits(const ModelWeights& weights, const at::Tensor& x);

// Batch invariance (docs/inference.md): whether plain linears and the head
// pad small row counts so that a row's outputs do not depend on how many
// rows a pass has (model/gpt_math.h ApplyLinear, row_stable). On by
// default; a process setting, like its thread count: every rank of a job
// sets it alike (`infer --batch-invariant`) before its first pass. Off
// saves the padding where plain weights decode a few sequences at a time.
void SetBatchInvariant(bool on);

// Whether this CPU can prepack every linear of a block of `config`
// (infer/prepacked_linear.h PrepackableLinear): the same answer on every
// rank of one host. Pure.
bool BlockPrepackable(const ModelConfig& config);
// The prepacked layout of all four linears of a block of `config` on this
// machine (infer/prepacked_linear.h PrepackedLayoutSignature); "" when not
// prepackable. Ranks with equal signatures may send each other prepacked
// blocks. Pure.
std::string BlockPrepackedSignature(const ModelConfig& config);

// Rewrites the four linear weights of `block` in place in the prepacked
// layout and marks it prepacked; its tensors must be writable views (a
// block loaded by LoadModelWeights is). BlockPrepackable(config) must hold;
// a block already prepacked is left as it is. Blocks while copying.
void PrepackBlock(BlockWeights& block, const ModelConfig& config);

}  // namespace pw
