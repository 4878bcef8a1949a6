// The decoder block's weight-bearing parts, op for op as model/gpt.cc
// Block::Forward computes them (LayerNormImpl: at::layer_norm eps 1e-5;
// LinearImpl without a store: torch::nn::functional::linear; at::gelu with
// its default exact form), so that inference reproduces training's forward.
#include "infer/layer_math.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/linear.h>

namespace pw {
namespace {

at::Tensor LayerNorm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return at::layer_norm(x, {weight.size(0)}, weight, bias, 1e-5);
}

at::Tensor Linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return torch::nn::functional::linear(x, weight, bias);
}

}  // namespace

at::Tensor Embed(const ModelWeights& weights, const at::Tensor& tokens,
                 const at::Tensor& positions) {
  // EmbeddingUnit adds pos_emb.narrow(0, 0, T): the same rows, gathered here
  // by position because rows of different sequences sit at different offsets.
  return at::embedding(weights.tok_emb, tokens) + weights.pos_emb.index_select(0, positions);
}

at::Tensor PreAttention(const BlockWeights& block, const at::Tensor& x) {
  return Linear(LayerNorm(x, block.ln1_weight, block.ln1_bias), block.qkv_weight, block.qkv_bias);
}

at::Tensor PostAttention(const BlockWeights& block, const at::Tensor& x,
                         const at::Tensor& attended) {
  at::Tensor h = x + Linear(attended, block.proj_weight, block.proj_bias);
  at::Tensor up = at::gelu(Linear(LayerNorm(h, block.ln2_weight, block.ln2_bias),
                                  block.fc_weight, block.fc_bias));
  return h + Linear(up, block.mlp_weight, block.mlp_bias);
}

at::Tensor HeadLogits(const ModelWeights& weights, const at::Tensor& x) {
  return Linear(LayerNorm(x, weights.head_ln_weight, weights.head_ln_bias), weights.lm_head,
                at::Tensor());
}

}  // namespace pw
