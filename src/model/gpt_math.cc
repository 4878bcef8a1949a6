// One place per op of the decoder (see gpt_math.h). The training path's
// floating-point operations and their order are fixed here: the pipeline
// tests compare runs bitwise, and inference reproduces training's forward
// by calling the same functions.
#include "model/gpt_math.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/linear.h>

#include <cmath>
#include <limits>
#include <vector>

#include "model/fused_kernels.h"
#include "model/split_linear.h"

namespace pw {
namespace {

// [..., rows, d] -> [..., n_heads, rows, d / n_heads] (a view).
at::Tensor SplitHeads(const at::Tensor& z, int n_heads) {
  at::DimVector shape(z.sizes().begin(), z.sizes().end());
  const int64_t d = shape.back();
  shape.back() = n_heads;
  shape.push_back(d / n_heads);
  return z.view(shape).transpose(-3, -2);
}

// Whether Dropout(x, p, ctx) is the identity (no random draws to keep in order).
bool DropoutOff(double p, const ForwardContext& ctx) { return p <= 0.0 || ctx.dropout == nullptr; }

// The activation of the MLP: GELU, erf form (at::gelu's default).
at::Tensor Gelu(const at::Tensor& x) {
  return FusedKernelsApply(x) ? FusedGelu(x) : at::gelu(x);
}

}  // namespace

at::Tensor ApplyLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                       const ForwardContext& ctx) {
  if (ctx.store != nullptr) return SplitLinear(x, weight, bias, ctx.store);
  return torch::nn::functional::linear(x, weight, bias);
}

at::Tensor LayerNorm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return at::layer_norm(x, {weight.size(0)}, weight, bias, 1e-5);
}

at::Tensor Dropout(const at::Tensor& x, double p, const ForwardContext& ctx) {
  if (p <= 0.0 || ctx.dropout == nullptr) return x;
  at::Tensor keep = at::empty_like(x).bernoulli_(1.0 - p, *ctx.dropout);
  return x * keep / (1.0 - p);
}

at::Tensor EmbedTokens(const at::Tensor& tok_emb, const at::Tensor& tokens,
                       const at::Tensor& positions) {
  return at::embedding(tok_emb, tokens) + positions;
}

at::Tensor HeadLogits(const at::Tensor& ln_weight, const at::Tensor& ln_bias,
                      const at::Tensor& lm_head, const at::Tensor& x, const ForwardContext& ctx) {
  return ApplyLinear(LayerNorm(x, ln_weight, ln_bias), lm_head, at::Tensor(), ctx);
}

at::Tensor BlockQkv(const BlockTensors& block, const at::Tensor& x, const ForwardContext& ctx) {
  return ApplyLinear(LayerNorm(x, block.ln1_weight, block.ln1_bias), block.qkv_weight,
                     block.qkv_bias, ctx);
}

at::Tensor CausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           int64_t start, int n_heads, double dropout, const ForwardContext& ctx) {
  // Without dropout on the weights, the fused kernel (model/fused_kernels.h);
  // with it, the op-by-op formulation below, whose draws the mask takes.
  if (DropoutOff(dropout, ctx) && FusedKernelsApply(q) && FusedKernelsApply(k) &&
      FusedKernelsApply(v)) {
    return FusedCausalAttention(q, k, v, start, n_heads);
  }
  const int64_t n = q.size(-2), length = k.size(-2), hd = q.size(-1) / n_heads;
  at::Tensor scores = at::matmul(SplitHeads(q, n_heads), SplitHeads(k, n_heads).transpose(-2, -1)) *
                      (1.0 / std::sqrt(double(hd)));
  // Query i sits at position start + i and sees keys 0 .. start + i. A single
  // query (a decode step) sees every key given: nothing to mask.
  if (n > 1) {
    at::Tensor future =
        at::ones({n, length}, at::TensorOptions().dtype(at::kBool)).triu(start + 1);
    scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  }
  at::Tensor weights = Dropout(at::softmax(scores, -1), dropout, ctx);
  return at::matmul(weights, SplitHeads(v, n_heads)).transpose(-3, -2).reshape(q.sizes());
}

at::Tensor BlockOutput(const BlockTensors& block, const at::Tensor& x, const at::Tensor& attended,
                       double dropout, const ForwardContext& ctx) {
  at::Tensor h =
      x + Dropout(ApplyLinear(attended, block.proj_weight, block.proj_bias, ctx), dropout, ctx);
  at::Tensor up = Gelu(
      ApplyLinear(LayerNorm(h, block.ln2_weight, block.ln2_bias), block.fc_weight, block.fc_bias,
                  ctx));
  return h + Dropout(ApplyLinear(up, block.mlp_weight, block.mlp_bias, ctx), dropout, ctx);
}

at::Tensor BlockForward(const BlockTensors& block, const at::Tensor& x, int n_heads,
                        double dropout, const ForwardContext& ctx) {
  at::Tensor qkv = BlockQkv(block, x, ctx);
  // Whole sequences attend over themselves: the fused kernel reads q, k, v
  // from qkv in place and returns one gradient for it.
  if (DropoutOff(dropout, ctx) && FusedKernelsApply(qkv) && qkv.dim() == 3) {
    return BlockOutput(block, x, FusedSelfAttention(qkv, n_heads), dropout, ctx);
  }
  std::vector<at::Tensor> parts = qkv.split(x.size(-1), /*dim=*/-1);
  at::Tensor attended = CausalAttention(parts[0], parts[1], parts[2], /*start=*/0, n_heads,
                                        dropout, ctx);
  return BlockOutput(block, x, attended, dropout, ctx);
}

}  // namespace pw
