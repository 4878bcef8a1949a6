// model/gpt_math.h over ModelWeights / BlockWeights, with the inference
// context: no weight-grad store (plain linear), no dropout.
#include "infer/layer_math.h"

#include <ATen/ATen.h>

#include <utility>
#include <vector>

#include "core/check.h"
#include "infer/prepacked_linear.h"
#include "model/fused_kernels.h"
#include "model/fused_row_kernels.h"
#include "model/gpt_math.h"
#include "model/panel_linear.h"

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

at::Tensor PanelLinearOf(const at::Tensor& x_in, const at::Tensor& packed, int64_t out, const at::Tensor& bias,
                         const at::Tensor& residual_in) {
  const at::Tensor x = x_in.contiguous();
  const int64_t rows = x.size(0), in = x.size(1);
  TORCH_CHECK(x.scalar_type() == at::kFloat && packed.numel() == out * in && packed.is_contiguous(),
              "PanelLinear: x ", x.sizes(), " does not fit a packed weight of ", packed.numel(), " values for ", out,
              " outputs");
  at::Tensor y = at::empty({rows, out}, x.options());
  PanelLinearArgs a;
  a.x = x.data_ptr<float>();
  a.rows = rows;
  a.ldx = in;
  a.packed = packed.data_ptr<float>();
  a.out = out;
  a.in = in;
  a.bias = bias.defined() ? bias.data_ptr<float>() : nullptr;
  at::Tensor residual;
  if (residual_in.defined()) {
    residual = residual_in.contiguous();
    TORCH_CHECK(residual.sizes() == y.sizes(), "PanelLinear: residual ", residual.sizes(), " is not ", y.sizes());
    a.residual = residual.data_ptr<float>();
    a.ldr = out;
  }
  a.y = y.data_ptr<float>();
  a.ldy = out;
  PanelLinear(ActiveKernelIsa(), a);
  return y;
}

namespace {

// The MLP's activation (model/gpt_math.h MlpActivation) with the row
// kernels, whose elements do not depend on their place in the tensor: at::
// elementwise ops run a vector body and a scalar tail over the flattened
// tensor, so an element's rounding there would depend on the row count.
at::Tensor FixedOrderActivation(MlpKind kind, const at::Tensor& a_in) {
  const at::Tensor a = a_in.contiguous();
  const fused::RowKernels& rows = fused::RowKernelsFor(ActiveKernelIsa());
  const float* ap = a.data_ptr<float>();
  if (kind == MlpKind::kSwiGlu) {
    const int64_t n = a.size(0), h = a.size(1) / 2;
    at::Tensor y = at::empty({n, h}, a.options());
    float* yp = y.data_ptr<float>();
    for (int64_t r = 0; r < n; ++r) rows.silu_mul(ap + r * 2 * h, ap + r * 2 * h + h, yp + r * h, h);
    return y;
  }
  at::Tensor y = at::empty_like(a);
  (kind == MlpKind::kGeluTanh ? rows.gelu_tanh : rows.gelu)(ap, y.data_ptr<float>(), a.numel());
  return y;
}

}  // namespace

at::Tensor Embed(const ModelWeights& weights, const at::Tensor& tokens,
                 const at::Tensor& positions) {
  // Training adds pos_emb.narrow(0, 0, T): the same rows, gathered here by
  // position because rows of different sequences sit at different offsets.
  const at::Tensor rows = weights.pos_emb.defined() ? weights.pos_emb.index_select(0, positions) : at::Tensor();
  if (weights.head_layout != LinearLayout::kPanels || !weights.lm_head.is_same(weights.tok_emb)) {
    return EmbedTokens(weights.tok_emb, tokens, rows);  // rope: positions enter at attention
  }
  // A tied embedding held in the head's panels: each token's row gathered.
  const int64_t vocab = weights.config.vocab_size, d = weights.config.d_model;
  const at::Tensor ids = tokens.contiguous();
  at::Tensor x = at::empty({ids.numel(), d}, weights.tok_emb.options());
  const int64_t* id = ids.data_ptr<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    TORCH_CHECK(id[i] >= 0 && id[i] < vocab, "Embed: token ", id[i], " is outside the vocabulary of ", vocab);
    PanelWeightRow(weights.tok_emb.data_ptr<float>(), vocab, d, id[i], x.data_ptr<float>() + i * d);
  }
  return rows.defined() ? x + rows : x;
}

at::Tensor PreAttention(const BlockWeights& block, const at::Tensor& x) {
  const at::Tensor normed = block.layout == LinearLayout::kPlain ? at::Tensor()
                                                                 : Norm(block.spec, x, block.ln1_weight, block.ln1_bias);
  switch (block.layout) {
    case LinearLayout::kPlain: return BlockQkv(TensorsOf(block), block.spec, x, ForwardContext{});
    case LinearLayout::kPanels:
      return PanelLinearOf(normed, block.qkv_weight, block.qkv_weight.numel() / x.size(1), block.qkv_bias);
    case LinearLayout::kOneDnn: break;
  }
  return PrepackedLinear(normed, block.qkv_weight, block.qkv_weight.numel() / x.size(1), block.qkv_bias,
                         LinearEpilogue::kNone);
}

at::Tensor PostAttention(const BlockWeights& block, const at::Tensor& x,
                         const at::Tensor& attended) {
  if (block.layout == LinearLayout::kPlain) {
    return BlockOutput(TensorsOf(block), block.spec, x, attended, ForwardContext{});
  }
  const int64_t d = x.size(1), up_width = block.fc_weight.numel() / d;
  if (block.layout == LinearLayout::kPanels) {
    // model/gpt_math.h BlockOutput, each addition inside a linear's epilogue.
    at::Tensor h = PanelLinearOf(attended, block.proj_weight, d, block.proj_bias, x);
    at::Tensor up = PanelLinearOf(Norm(block.spec, h, block.ln2_weight, block.ln2_bias), block.fc_weight, up_width,
                                  block.fc_bias);
    return PanelLinearOf(FixedOrderActivation(block.spec.mlp, up), block.mlp_weight, d, block.mlp_bias, h);
  }
  // model/gpt_math.h BlockOutput: h = x + proj(attended);
  // out = h + mlp(act(fc(Norm2(h)))), each addition (and GELU, erf form)
  // inside a matmul; GELU-tanh and SwiGLU are applied between the two.
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

void PrepackBlock(BlockWeights& block, const ModelConfig& config, LinearLayout layout) {
  PW_CHECK(block.defined(), "PrepackBlock of a block that is not held");
  if (block.layout == layout || layout == LinearLayout::kPlain) return;
  PW_CHECK(block.layout == LinearLayout::kPlain, "PrepackBlock: the block is packed in another layout already");
  PW_CHECK(layout != LinearLayout::kOneDnn || BlockPrepackable(config),
           "PrepackBlock: this CPU has no prepacked kernels for the model");
  for (at::Tensor* w : {&block.qkv_weight, &block.proj_weight, &block.fc_weight, &block.mlp_weight}) {
    at::Tensor packed = at::empty({w->numel()}, w->options());
    if (layout == LinearLayout::kOneDnn) {
      PrepackLinearWeight(*w, packed);
    } else {
      PackPanels(w->data_ptr<float>(), w->size(0), w->size(1), packed.data_ptr<float>());
    }
    at::Tensor flat = w->view({-1});
    flat.copy_(packed);
    *w = flat;
  }
  block.layout = layout;
}

void PackHeadInPanels(ModelWeights& weights) {
  if (weights.head_layout == LinearLayout::kPanels) return;
  const bool tied = weights.lm_head.is_same(weights.tok_emb);
  const at::Tensor plain = weights.lm_head.contiguous();
  at::Tensor packed = at::empty({plain.numel()}, plain.options());
  PackPanels(plain.data_ptr<float>(), plain.size(0), plain.size(1), packed.data_ptr<float>());
  weights.lm_head = packed;
  if (tied) weights.tok_emb = packed;
  weights.head_layout = LinearLayout::kPanels;
}

void PackWeights(ModelWeights& weights, LinearLayout layout) {
  for (BlockWeights& block : weights.blocks) {
    if (block.defined()) PrepackBlock(block, weights.config, layout);
  }
  if (layout == LinearLayout::kPanels) PackHeadInPanels(weights);
}

at::Tensor HeadLogits(const ModelWeights& weights, const at::Tensor& x) {
  const BlockSpec spec = BlockSpecOf(weights.config);
  if (weights.head_layout == LinearLayout::kPanels) {
    return PanelLinearOf(Norm(spec, x, weights.head_ln_weight, weights.head_ln_bias), weights.lm_head,
                         weights.config.vocab_size, at::Tensor());
  }
  return HeadLogits(spec, weights.head_ln_weight, weights.head_ln_bias, weights.lm_head, x, ForwardContext{});
}

}  // namespace pw
