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
// A block's linears run as its layout says (BlockWeights::layout):
//   plain    LibTorch's linear (OpenBLAS), the training code's own path;
//   prepacked oneDNN with the bias, GELU and residual inside each matmul
//            (infer/prepacked_linear.h): the same arithmetic to fp32
//            rounding;
//   panels   pipewright's fixed-order kernels (model/panel_linear.h), and
//            with them the MLP activation as fixed-order row kernels: every
//            output of a row is computed from that row alone, in one order,
//            whatever else the pass holds — batch invariance by
//            construction (docs/inference.md). The head follows
//            ModelWeights::head_layout.
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

// y [rows, out] = x W^T + bias (+ residual [rows, out]) over W held in
// panels (`packed`: PackPanels of W [out, in] — float, bfloat16, or int8
// with its per-output `scale` [out]), at the process's kernel level
// (model/panel_linear.h: one summation order per element). x [rows, in]
// fp32. Shape errors throw c10::Error.
at::Tensor PanelLinearOf(const at::Tensor& x, const at::Tensor& packed, int64_t out, const at::Tensor& bias,
                         const at::Tensor& residual = at::Tensor(), const at::Tensor& scale = at::Tensor());


// W [out, in] fp32 packed in panels of `format` (model/panel_linear.h): a
// new 1-D tensor of out * in float, bfloat16 or int8 values, and for int8
// its per-output scales in *scale (which may be null for the others). What
// PanelLinearOf reads. Blocks while copying.
at::Tensor PackInPanels(const at::Tensor& w, WeightFormat format, at::Tensor* scale);

// Whether this CPU can prepack every linear of a block of `config`
// (infer/prepacked_linear.h PrepackableLinear): the same answer on every
// rank of one host. Pure.
bool BlockPrepackable(const ModelConfig& config);
// The prepacked layout of all four linears of a block of `config` on this
// machine (infer/prepacked_linear.h PrepackedLayoutSignature); "" when not
// prepackable. Ranks with equal signatures may send each other prepacked
// blocks. Pure.
std::string BlockPrepackedSignature(const ModelConfig& config);

// Rewrites the four linear weights of a plain fp32 `block` in `layout` and
// `format`, and marks it so: fp32 in place (its tensors must be writable
// views; a block loaded by LoadModelWeights is), bf16 and int8 into a new
// flat tensor of their size (the fp32 one is released). kOneDnn needs
// BlockPrepackable(config); bf16 and int8 need kPanels (PW_CHECK). kPlain
// fp32, or a block already so, is left as it is. Blocks while copying.
void PrepackBlock(BlockWeights& block, const ModelConfig& config, LinearLayout layout,
                  WeightFormat format = WeightFormat::kFp32);

// Holds the head (and a tied embedding with it) in the panel layout and
// `format`, in new memory (the loaded tensor may be a read-only mapping),
// and sets head_layout and head_format; an untied embedding goes to bf16
// unless the format is fp32. Idempotent. Blocks while copying.
void PackHeadInPanels(ModelWeights& weights, WeightFormat format = WeightFormat::kFp32);

// Packs every held block of plain `weights` in `layout` and `format`
// (PrepackBlock), and for kPanels the head too: panels are what
// batch-invariant inference computes with. Blocks while copying.
void PackWeights(ModelWeights& weights, LinearLayout layout, WeightFormat format = WeightFormat::kFp32);

}  // namespace pw
