// model/gpt_math.h over ModelWeights / BlockWeights, with the inference
// context: no weight-grad store (plain linear), no dropout.
#include "infer/layer_math.h"

#include <ATen/ATen.h>

#include "model/gpt_math.h"

namespace pw {
namespace {

BlockTensors TensorsOf(const BlockWeights& b) {
  return BlockTensors{.ln1_weight = b.ln1_weight, .ln1_bias = b.ln1_bias,
                      .qkv_weight = b.qkv_weight, .qkv_bias = b.qkv_bias,
                      .proj_weight = b.proj_weight, .proj_bias = b.proj_bias,
                      .ln2_weight = b.ln2_weight, .ln2_bias = b.ln2_bias,
                      .fc_weight = b.fc_weight, .fc_bias = b.fc_bias,
                      .mlp_weight = b.mlp_weight, .mlp_bias = b.mlp_bias};
}

}  // namespace

at::Tensor Embed(const ModelWeights& weights, const at::Tensor& tokens,
                 const at::Tensor& positions) {
  // Training adds pos_emb.narrow(0, 0, T): the same rows, gathered here by
  // position because rows of different sequences sit at different offsets.
  return EmbedTokens(weights.tok_emb, tokens, weights.pos_emb.index_select(0, positions));
}

at::Tensor PreAttention(const BlockWeights& block, const at::Tensor& x) {
  return BlockQkv(TensorsOf(block), x, ForwardContext{});
}

at::Tensor PostAttention(const BlockWeights& block, const at::Tensor& x,
                         const at::Tensor& attended) {
  return BlockOutput(TensorsOf(block), x, attended, /*dropout=*/0.0, ForwardContext{});
}

at::Tensor HeadLogits(const ModelWeights& weights, const at::Tensor& x) {
  return HeadLogits(weights.head_ln_weight, weights.head_ln_bias, weights.lm_head, x,
                    ForwardContext{});
}

}  // namespace pw
