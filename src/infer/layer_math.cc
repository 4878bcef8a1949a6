// model/gpt_math.h over ModelWeights / BlockWeights, with the inference
// context: no weight-grad store (plain linear), no dropout.
#include "infer/layer_math.h"

#include <ATen/ATen.h>

#include <tuple>
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
                         const at::Tensor& residual_in, const at::Tensor& scale) {
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
  switch (packed.scalar_type()) {
    case at::kFloat: a.packed = packed.data_ptr<float>(); break;
    case at::kBFloat16: a.packed_bf16 = reinterpret_cast<const Bf16Bits*>(packed.data_ptr()); break;
    case at::kChar:
      TORCH_CHECK(scale.defined() && scale.scalar_type() == at::kFloat && scale.numel() == out,
                  "PanelLinear: an int8 weight needs its ", out, " per-output scales");
      a.packed_int8 = packed.data_ptr<int8_t>();
      a.scales = scale.data_ptr<float>();
      break;
    default: TORCH_CHECK(false, "PanelLinear: no kernel for a ", packed.scalar_type(), " weight");
  }
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
    if (weights.tok_emb.scalar_type() != at::kFloat) {  // an untied embedding held in bf16
      const at::Tensor x = weights.tok_emb.index_select(0, tokens.reshape({-1})).to(at::kFloat);
      return rows.defined() ? x + rows : x;
    }
    return EmbedTokens(weights.tok_emb, tokens, rows);  // rope: positions enter at attention
  }
  // A tied embedding held in the head's panels: each token's row gathered
  // and widened.
  const int64_t vocab = weights.config.vocab_size, d = weights.config.d_model;
  const at::Tensor ids = tokens.contiguous();
  at::Tensor x = at::empty({ids.numel(), d}, at::kFloat);
  const int64_t* id = ids.data_ptr<int64_t>();
  const at::Tensor& table = weights.tok_emb;
  for (int64_t i = 0; i < ids.numel(); ++i) {
    TORCH_CHECK(id[i] >= 0 && id[i] < vocab, "Embed: token ", id[i], " is outside the vocabulary of ", vocab);
    float* dst = x.data_ptr<float>() + i * d;
    switch (weights.head_format) {
      case WeightFormat::kFp32: PanelWeightRow(table.data_ptr<float>(), vocab, d, id[i], dst); break;
      case WeightFormat::kBf16:
        PanelWeightRow(reinterpret_cast<const Bf16Bits*>(table.data_ptr()), vocab, d, id[i], dst);
        break;
      case WeightFormat::kInt8:
        PanelWeightRow(table.data_ptr<int8_t>(), weights.lm_head_scale.data_ptr<float>(), vocab, d, id[i], dst);
        break;
    }
  }
  return rows.defined() ? x + rows : x;
}

at::Tensor PreAttention(const BlockWeights& block, const at::Tensor& x) {
  const at::Tensor normed = block.layout == LinearLayout::kPlain ? at::Tensor()
                                                                 : Norm(block.spec, x, block.ln1_weight, block.ln1_bias);
  switch (block.layout) {
    case LinearLayout::kPlain: return BlockQkv(TensorsOf(block), block.spec, x, ForwardContext{});
    case LinearLayout::kPanels:
      return PanelLinearOf(normed, block.qkv_weight, block.qkv_weight.numel() / x.size(1), block.qkv_bias,
                           at::Tensor(), block.qkv_scale);
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
    at::Tensor h = PanelLinearOf(attended, block.proj_weight, d, block.proj_bias, x, block.proj_scale);
    at::Tensor up = PanelLinearOf(Norm(block.spec, h, block.ln2_weight, block.ln2_bias), block.fc_weight, up_width,
                                  block.fc_bias, at::Tensor(), block.fc_scale);
    return PanelLinearOf(FixedOrderActivation(block.spec.mlp, up), block.mlp_weight, d, block.mlp_bias, h,
                         block.mlp_scale);
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

at::Tensor PackInPanels(const at::Tensor& w_in, WeightFormat format, at::Tensor* scale) {
  const at::Tensor w = w_in.contiguous();
  const int64_t out = w.size(0), in = w.size(1);
  switch (format) {
    case WeightFormat::kBf16: {
      at::Tensor packed = at::empty({out * in}, at::kBFloat16);
      PackPanelsBf16(w.data_ptr<float>(), out, in, reinterpret_cast<Bf16Bits*>(packed.data_ptr()));
      return packed;
    }
    case WeightFormat::kInt8: {
      at::Tensor packed = at::empty({out * in}, at::kChar);
      *scale = at::empty({out}, at::kFloat);
      PackPanelsInt8(w.data_ptr<float>(), out, in, packed.data_ptr<int8_t>(), scale->data_ptr<float>());
      return packed;
    }
    case WeightFormat::kFp32: break;
  }
  at::Tensor packed = at::empty({out * in}, at::kFloat);
  PackPanels(w.data_ptr<float>(), out, in, packed.data_ptr<float>());
  return packed;
}

namespace {

// A plain fp32 block's linears packed in panels of `format` (bf16, int8)
// in a new flat tensor of that format's size; norms and biases copied.
BlockWeights PanelBlockIn(const BlockWeights& plain, const ModelConfig& config, WeightFormat format) {
  BlockWeights packed = UnpackBlock(at::empty({BlockBytes(config, format)}, at::kByte), config,
                                    LinearLayout::kPanels, format);
  const std::pair<const at::Tensor*, at::Tensor*> copies[] = {
      {&plain.ln1_weight, &packed.ln1_weight}, {&plain.ln1_bias, &packed.ln1_bias},
      {&plain.qkv_bias, &packed.qkv_bias},     {&plain.proj_bias, &packed.proj_bias},
      {&plain.ln2_weight, &packed.ln2_weight}, {&plain.ln2_bias, &packed.ln2_bias},
      {&plain.fc_bias, &packed.fc_bias},       {&plain.mlp_bias, &packed.mlp_bias}};
  for (auto [from, to] : copies) {
    if (from->defined()) to->copy_(*from);
  }
  const std::tuple<const at::Tensor*, at::Tensor*, at::Tensor*> linears[] = {
      {&plain.qkv_weight, &packed.qkv_weight, &packed.qkv_scale},
      {&plain.proj_weight, &packed.proj_weight, &packed.proj_scale},
      {&plain.fc_weight, &packed.fc_weight, &packed.fc_scale},
      {&plain.mlp_weight, &packed.mlp_weight, &packed.mlp_scale}};
  for (auto [from, to, scale] : linears) {
    at::Tensor s;
    to->copy_(PackInPanels(*from, format, &s));
    if (s.defined()) scale->copy_(s);
  }
  return packed;
}

}  // namespace

void PrepackBlock(BlockWeights& block, const ModelConfig& config, LinearLayout layout, WeightFormat format) {
  PW_CHECK(block.defined(), "PrepackBlock of a block that is not held");
  PW_CHECK(format == WeightFormat::kFp32 || layout == LinearLayout::kPanels,
           std::string("PrepackBlock: ") + WeightFormatName(format) + " weights are held in panels only");
  if ((block.layout == layout && block.format == format) || (layout == LinearLayout::kPlain)) return;
  PW_CHECK(block.layout == LinearLayout::kPlain && block.format == WeightFormat::kFp32,
           "PrepackBlock: the block is packed in another layout already");
  PW_CHECK(layout != LinearLayout::kOneDnn || BlockPrepackable(config),
           "PrepackBlock: this CPU has no prepacked kernels for the model");
  if (format != WeightFormat::kFp32) {
    block = PanelBlockIn(block, config, format);
    return;
  }
  for (at::Tensor* w : {&block.qkv_weight, &block.proj_weight, &block.fc_weight, &block.mlp_weight}) {
    at::Tensor packed;
    if (layout == LinearLayout::kOneDnn) {
      packed = at::empty({w->numel()}, w->options());
      PrepackLinearWeight(*w, packed);
    } else {
      packed = PackInPanels(*w, WeightFormat::kFp32, nullptr);
    }
    at::Tensor flat = w->view({-1});
    flat.copy_(packed);
    *w = flat;
  }
  block.layout = layout;
}

void PackHeadInPanels(ModelWeights& weights, WeightFormat format) {
  if (weights.head_layout == LinearLayout::kPanels) return;
  const bool tied = weights.lm_head.is_same(weights.tok_emb);
  const at::Tensor packed = PackInPanels(weights.lm_head, format, &weights.lm_head_scale);
  weights.lm_head = packed;
  if (tied) {
    weights.tok_emb = packed;
  } else if (format != WeightFormat::kFp32) {
    weights.tok_emb = weights.tok_emb.to(at::kBFloat16);
  }
  weights.head_layout = LinearLayout::kPanels;
  weights.head_format = format;
}

void PackWeights(ModelWeights& weights, LinearLayout layout, WeightFormat format) {
  for (BlockWeights& block : weights.blocks) {
    if (block.defined()) PrepackBlock(block, weights.config, layout, format);
  }
  if (layout == LinearLayout::kPanels) PackHeadInPanels(weights, format);
}

at::Tensor HeadLogits(const ModelWeights& weights, const at::Tensor& x) {
  const BlockSpec spec = BlockSpecOf(weights.config);
  if (weights.head_layout == LinearLayout::kPanels) {
    return PanelLinearOf(Norm(spec, x, weights.head_ln_weight, weights.head_ln_bias), weights.lm_head,
                         weights.config.vocab_size, at::Tensor(), at::Tensor(), weights.lm_head_scale);
  }
  return HeadLogits(spec, weights.head_ln_weight, weights.head_ln_bias, weights.lm_head, x, ForwardContext{});
}

}  // namespace pw
