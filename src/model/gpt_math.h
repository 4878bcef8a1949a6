// The GPT decoder's arithmetic, written once, as functions over tensors.
// Training (model/gpt.h: the modules hold the parameters and call these) and
// inference (infer/: the weight pool applies a block's two weight-bearing
// parts to held, fetched or remote weights; infer/decoder.h attends over the
// paged KV cache) run the same code, so an incremental decode reproduces
// the training forward.
//
// A block is pre-norm: x + Attn(Norm1(x)), then h + MLP(Norm2(h)). What
// varies between model families is data (BlockSpec, from the ModelConfig):
// the norm (LayerNorm or RMSNorm), the positions (a learned table added at
// the embedding, or rotary embeddings applied to q and k), the MLP (GELU,
// GELU-tanh, or SwiGLU with gate and up fused in one weight), and
// grouped-query attention (fewer key/value heads than query heads). The
// block splits where the weights are, so that inference can run each part
// where the weights live and attention where the KV cache lives:
//   BlockQkv        Norm1 + fused q|k|v projection       (weights)
//   ApplyRotary     rope: q and k rotated by position    (no weights)
//   CausalAttention multi-head attention of new queries
//                   over the K/V history                 (no weights)
//   BlockOutput     proj + residual, Norm2, MLP,
//                   residual                             (weights)
// BlockForward composes them with the history "this sequence only" (the
// training forward); infer/decoder.cc composes them with the cache.
//
// How a linear is applied is the ForwardContext: with a WeightGradStore it
// is the split linear (model/split_linear.h: backward computes dX and queues
// dW for zero-bubble schedules), without one plain y = x·Wᵀ + b (inference,
// and the autograd-only reference). Where it is applied (locally, on a
// fetched copy, or by the weight's owner) is the weight pool's business
// (infer/weight_pool.h), at the granularity of BlockQkv / BlockOutput.
//
// Tensors are [..., d] with any leading dims (training: [B, T, d];
// inference: rows of many sequences, [N, d]). Thread-safety: pure
// functions, as any LibTorch op. Shape errors throw c10::Error.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "model/model_config.h"

namespace pw {

class WeightGradStore;

// Rotary embeddings' angles for some rows: cos and sin [rows, head_dim / 2]
// of position x frequency (RotaryAnglesAt).
struct RotaryAngles {
  at::Tensor cos;
  at::Tensor sin;
};

// Per-call settings of a forward pass.
struct ForwardContext {
  WeightGradStore* store = nullptr;   // null: plain linear (no split backward)
  at::Generator* dropout = nullptr;   // dropout's random source (training with dropout > 0)
  const RotaryAngles* rotary = nullptr;  // rope: the angles of the rows' positions
};

// What of the model config a block's arithmetic needs.
struct BlockSpec {
  int n_heads = 1;
  int n_kv_heads = 1;        // == n_heads: plain multi-head attention
  bool rms_norm = false;     // RMSNorm (weight only) instead of LayerNorm
  double norm_eps = 1e-5;
  MlpKind mlp = MlpKind::kGelu;
  bool rope = false;         // rotate q and k (ctx.rotary holds the angles)
  double dropout = 0.0;      // residual and attention dropout in training
};
BlockSpec BlockSpecOf(const ModelConfig& config);

// One block's parameters, by reference (not owned): the training module's
// parameters or inference's held / fetched weights. Biases are undefined
// tensors when the model has none (bias = false; an RMSNorm has none).
// Parameter names (model/gpt.h): ln1, attn.qkv, attn.proj, ln2, mlp.fc,
// mlp.proj. qkv is q, k and v stacked ([d + 2 kv_width, d]); a SwiGLU
// fc is gate and up stacked ([2h, d]).
struct BlockTensors {
  const at::Tensor& ln1_weight;
  const at::Tensor& ln1_bias;
  const at::Tensor& qkv_weight;   // [d + 2 kv_width, d]
  const at::Tensor& qkv_bias;     // [d + 2 kv_width]
  const at::Tensor& proj_weight;  // [d, d]
  const at::Tensor& proj_bias;    // [d]
  const at::Tensor& ln2_weight;
  const at::Tensor& ln2_bias;
  const at::Tensor& fc_weight;    // [h, d]; SwiGLU: [2h, d], gate rows first
  const at::Tensor& fc_bias;      // [h] ([2h])
  const at::Tensor& mlp_weight;   // [d, h] ("mlp.proj")
  const at::Tensor& mlp_bias;     // [d]
};

// y = x·Wᵀ + b; weight [out, in], bias [out] or undefined. The split linear
// when ctx.store is set, else torch::nn::functional::linear (whose
// summation order is the BLAS's choice per call: batch-invariant inference
// uses model/panel_linear.h instead, through infer/layer_math.h).
at::Tensor ApplyLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                       const ForwardContext& ctx);

// The spec's norm over the last dim: LayerNorm(weight, bias) or RMSNorm
// x / sqrt(mean(x²) + eps) · weight (bias unused), eps from the spec.
at::Tensor Norm(const BlockSpec& spec, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);

// The MLP's activation of its up projection a [..., h] (SwiGLU: gate and up
// stacked, [..., 2h] -> [..., h]).
at::Tensor MlpActivation(MlpKind kind, const at::Tensor& a);

// Inverted dropout with probability p drawing its mask from ctx.dropout (no
// global RNG). Returns x itself when p == 0 or ctx.dropout is null.
at::Tensor Dropout(const at::Tensor& x, double p, const ForwardContext& ctx);

// The rotary frequencies of a rope model [head_dim / 2] (float): theta^(-2i
// / head_dim), with Llama 3.1's scaling when config.rope_scaling is llama3.
at::Tensor RotaryFrequencies(const ModelConfig& config);

// cos and sin of positions (int64 [rows]) times frequencies.
RotaryAngles RotaryAnglesAt(const at::Tensor& frequencies, const at::Tensor& positions);

// x [..., rows, heads · head_dim] with each head rotated by the rows' angles
// (the "rotate half" form of Hugging Face's Llama: the first and second
// half of a head are the pair's two coordinates).
at::Tensor ApplyRotary(const at::Tensor& x, int heads, const RotaryAngles& angles);

// Token embeddings of `tokens` (int64, any shape) plus `positions`, the
// position embeddings of those rows (broadcast over the leading dims);
// `positions` undefined (rope): the token embeddings alone.
at::Tensor EmbedTokens(const at::Tensor& tok_emb, const at::Tensor& tokens,
                       const at::Tensor& positions);

// The final norm and the bias-free LM head (untied, or the token embedding
// when tied): x [..., d] -> [..., vocab].
at::Tensor HeadLogits(const BlockSpec& spec, const at::Tensor& ln_weight, const at::Tensor& ln_bias,
                      const at::Tensor& lm_head, const at::Tensor& x, const ForwardContext& ctx);

// x [..., d] -> qkv [..., d + 2 kv_width] (q, k, v concatenated on the last
// dim), not rotated.
at::Tensor BlockQkv(const BlockTensors& block, const BlockSpec& spec, const at::Tensor& x,
                    const ForwardContext& ctx);

// Causal multi-head attention (n_heads query heads) of queries q [..., n, d]
// at positions [start, start + n) over keys and values k, v [..., L, kv]
// at positions [0, L), L >= start + n: query i sees keys 0 .. start + i.
// With kv < d (grouped-query attention) kv / (d / n_heads) key/value heads
// each serve n_heads / that many consecutive query heads. softmax(q·kᵀ /
// sqrt(head_dim)) with the future masked, dropout p on the attention
// weights, times v. Returns [..., n, d]. Without dropout (p == 0 or no
// ctx.dropout) on fp32 CPU tensors it runs the fused kernel of
// model/fused_kernels.h, else the op-by-op LibTorch formulation.
at::Tensor CausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           int64_t start, int n_heads, double dropout, const ForwardContext& ctx);

// x [..., d] (the block's input), attended [..., d] -> the block's output
// [..., d]: h = x + Dropout(proj(attended)); h + Dropout(mlp(Norm2(h))).
at::Tensor BlockOutput(const BlockTensors& block, const BlockSpec& spec, const at::Tensor& x,
                       const at::Tensor& attended, const ForwardContext& ctx);

// The whole block over whole sequences x [B, T, d] (keys and values: the
// sequence's own, causal; rope: ctx.rotary holds positions 0 .. T-1) ->
// [B, T, d]. Attention reads q, k, v in place from one [B, T, 3d] tensor
// (FusedSelfAttention) when CausalAttention would take the fused kernel
// (rope and grouped-query models build that tensor from the rotated q, k
// and the key/value heads repeated per group).
at::Tensor BlockForward(const BlockTensors& block, const BlockSpec& spec, const at::Tensor& x,
                        const ForwardContext& ctx);

}  // namespace pw
