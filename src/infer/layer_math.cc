// model/gpt_math.h over ModelWeights / BlockWeights, with the inference
// context: no weight-grad store (plain linear), no dropout.
#include "infer/layer_math.h"

#include <ATen/ATen.h>

#include <atomic>
#include <utility>
#include <vector>

#include "core/check.h"
#include "infer/prepacked_linear.h"
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

// Linears whose rows do not depend on the pass's row count (batch
// invariance, model/gpt_math.h ApplyLinear).
std::atomic<bool> batch_invariant{true};

ForwardContext RowStable() {
  ForwardContext ctx;
  ctx.row_stable = batch_invariant.load(std::memory_order_relaxed);
  return ctx;
}

}  // namespace

void SetBatchInvariant(bool on) { batch_invariant.store(on, std::memory_order_relaxed); }

at::Tensor Embed(const ModelWeights& weights, const at::Tensor& tokens,
                 const at::Tensor& positions) {
  // Training adds pos_emb.narrow(0, 0, T): the same rows, gathered here by
  // position because rows of different sequences sit at different offsets.
  const at::Tensor rows = weights.pos_emb.defined() ? weights.pos_emb.index_select(0, positions) : at::Tensor();
  return EmbedTokens(weights.tok_emb, tokens, rows);  // rope: positions enter at attention
}

at::Tensor PreAttention(const BlockWeights& block, const at::Tensor& x) {
  if (!block.prepacked) return BlockQkv(TensorsOf(block), block.spec, x, RowStable());
  return PrepackedLinear(Norm(block.spec, x, block.ln1_weight, block.ln1_bias), block.qkv_weight,
                         block.qkv_weight.numel() / x.size(1), block.qkv_bias, LinearEpilogue::kNone);
}

at::Tensor PostAttention(const BlockWeights& block, const at::Tensor& x,
                         const at::Tensor& attended) {
  if (!block.prepacked) {
    return BlockOutput(TensorsOf(block), block.spec, x, attended, RowStable());
  }
  // model/gpt_math.h BlockOutput: h = x + proj(attended);
  // out = h + mlp(act(fc(Norm2(h)))), each addition (and GELU, erf form)
  // inside a matmul; GELU-tanh and SwiGLU are applied between the two.
  const int64_t d = x.size(1), up_width = block.fc_weight.numel() / d;
  at::Tensor h = PrepackedLinear(attended, block.proj_weight, d, block.proj_bias,
                                 LinearEpilogue::kResidual, x);
  const bool fused_gelu = block.spec.mlp == MlpKind::kGelu;
  at::Tensor up = PrepackedLinear(Norm(block.spec, h, block.ln2_weight, block.ln2_bias), block.fc_weight, up_width,
                                  block.fc_bias, fused_gelu ? LinearEpilogue::kGelu : LinearEpilogue::kNone);
  if (!fused_gelu) up = MlpActivation(block.spec.mlp, up);
  return PrepackedLinear(up, block.mlp_weight, d, block.mlp_bias, LinearEpilogue::kResidual, h);
}

namespace {

// [out, in] of a block's four linears: qkv, proj, fc, mlp.
std::vector<std::pair<int64_t, int64_t>> LinearShapes(const ModelConfig& config) {
  const int64_t d = config.d_model, hidden = config.ffn_width();
  return {{config.qkv_width(), d}, {d, d}, {config.mlp_up_width(), d}, {d, hidden}};
}

}  // namespace

bool BlockPrepackable(const ModelConfig& config) {
  for (auto [out, in] : LinearShapes(config)) {
    if (!PrepackableLinear(out, in)) return false;
  }
  return true;
}

std::string BlockPrepackedSignature(const ModelConfig& config) {
  if (!BlockPrepackable(config)) return "";
  std::string signature;
  for (auto [out, in] : LinearShapes(config)) signature += PrepackedLayoutSignature(out, in) + "; ";
  return signature;
}

void PrepackBlock(BlockWeights& block, const ModelConfig& config) {
  PW_CHECK(block.defined(), "PrepackBlock of a block that is not held");
  if (block.prepacked) return;
  PW_CHECK(BlockPrepackable(config), "PrepackBlock: this CPU has no prepacked kernels for the model");
  for (at::Tensor* w : {&block.qkv_weight, &block.proj_weight, &block.fc_weight, &block.mlp_weight}) {
    at::Tensor packed = at::empty({w->numel()}, w->options());
    PrepackLinearWeight(*w, packed);
    at::Tensor flat = w->view({-1});
    flat.copy_(packed);
    *w = flat;
  }
  block.prepacked = true;
}

at::Tensor HeadLogits(const ModelWeights& weights, const at::Tensor& x) {
  return HeadLogits(BlockSpecOf(weights.config), weights.head_ln_weight, weights.head_ln_bias, weights.lm_head, x,
                    RowStable());
}

}  // namespace pw
