// The GPT decoder's arithmetic, written once, as functions over tensors.
// Training (model/gpt.h: the modules hold the parameters and call these) and
// inference (infer/: the weight pool applies a block's two weight-bearing
// parts to held, fetched or remote weights; infer/decoder.h attends over the
// paged KV cache) run the same code, so an incremental decode reproduces
// the training forward.
//
// A block is pre-norm: x + Attn(LN1(x)), then h + MLP(LN2(h)). It splits
// where the weights are, so that inference can run each part where the
// weights live and attention where the KV cache lives:
//   BlockQkv        LN1 + qkv projection                (weights)
//   CausalAttention multi-head attention of new queries
//                   over the K/V history                 (no weights)
//   BlockOutput     proj + residual, LN2, GELU MLP,
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

namespace pw {

class WeightGradStore;

// Per-call settings of a forward pass.
struct ForwardContext {
  WeightGradStore* store = nullptr;   // null: plain linear (no split backward)
  at::Generator* dropout = nullptr;   // dropout's random source (training with dropout > 0)
};

// One block's parameters, by reference (not owned): the training module's
// parameters or inference's held / fetched weights. Biases are undefined
// tensors when the model has bias = false. Parameter names (model/gpt.h):
// ln1, attn.qkv, attn.proj, ln2, mlp.fc, mlp.proj.
struct BlockTensors {
  const at::Tensor& ln1_weight;
  const at::Tensor& ln1_bias;
  const at::Tensor& qkv_weight;   // [3d, d]
  const at::Tensor& qkv_bias;     // [3d]
  const at::Tensor& proj_weight;  // [d, d]
  const at::Tensor& proj_bias;    // [d]
  const at::Tensor& ln2_weight;
  const at::Tensor& ln2_bias;
  const at::Tensor& fc_weight;    // [h, d]
  const at::Tensor& fc_bias;      // [h]
  const at::Tensor& mlp_weight;   // [d, h] ("mlp.proj")
  const at::Tensor& mlp_bias;     // [d]
};

// y = x·Wᵀ + b; weight [out, in], bias [out] or undefined. The split linear
// when ctx.store is set, else torch::nn::functional::linear.
at::Tensor ApplyLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                       const ForwardContext& ctx);

// LayerNorm over the last dim (eps 1e-5).
at::Tensor LayerNorm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);

// Inverted dropout with probability p drawing its mask from ctx.dropout (no
// global RNG). Returns x itself when p == 0 or ctx.dropout is null.
at::Tensor Dropout(const at::Tensor& x, double p, const ForwardContext& ctx);

// Token embeddings of `tokens` (int64, any shape) plus `positions`, the
// position embeddings of those rows (broadcast over the leading dims).
at::Tensor EmbedTokens(const at::Tensor& tok_emb, const at::Tensor& tokens,
                       const at::Tensor& positions);

// Final LayerNorm and the untied, bias-free LM head: x [..., d] -> [..., vocab].
at::Tensor HeadLogits(const at::Tensor& ln_weight, const at::Tensor& ln_bias,
                      const at::Tensor& lm_head, const at::Tensor& x, const ForwardContext& ctx);

// x [..., d] -> qkv [..., 3d] (q, k, v concatenated on the last dim).
at::Tensor BlockQkv(const BlockTensors& block, const at::Tensor& x, const ForwardContext& ctx);

// Causal multi-head attention (n_heads heads) of queries q [..., n, d] at
// positions [start, start + n) over keys and values k, v [..., L, d] at
// positions [0, L), L >= start + n: query i sees keys 0 .. start + i.
// softmax(q·kᵀ / sqrt(d / n_heads)) with the future masked, dropout p on the
// attention weights, times v. Returns [..., n, d]. Without dropout (p == 0 or
// no ctx.dropout) on fp32 CPU tensors it runs the fused kernel of
// model/fused_kernels.h, else the op-by-op LibTorch formulation.
at::Tensor CausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           int64_t start, int n_heads, double dropout, const ForwardContext& ctx);

// x [..., d] (the block's input), attended [..., d] -> the block's output
// [..., d]: h = x + Dropout(proj(attended)); h + Dropout(mlp(LN2(h))).
at::Tensor BlockOutput(const BlockTensors& block, const at::Tensor& x, const at::Tensor& attended,
                       double dropout, const ForwardContext& ctx);

// The whole block over whole sequences x [B, T, d] (keys and values: the
// sequence's own, causal) -> [B, T, d]. Attention reads q, k, v in place
// from the qkv projection (FusedSelfAttention) when CausalAttention would
// take the fused kernel.
at::Tensor BlockForward(const BlockTensors& block, const at::Tensor& x, int n_heads,
                        double dropout, const ForwardContext& ctx);

}  // namespace pw
