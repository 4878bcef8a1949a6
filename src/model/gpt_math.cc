// One place per op of the decoder (see gpt_math.h). The training path's
// floating-point operations and their order are fixed here: the pipeline
// tests compare runs bitwise, and inference reproduces training's forward
// by calling the same functions.
#include "model/gpt_math.h"

#include <ATen/ATen.h>
#include <torch/nn/functional/linear.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "model/fused_kernels.h"
#include "model/fused_llama_kernels.h"
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

}  // namespace

at::Tensor MlpActivation(MlpKind kind, const at::Tensor& a) {
  switch (kind) {
    case MlpKind::kGeluTanh: return at::gelu(a, "tanh");
    case MlpKind::kSwiGlu: {
      const int64_t h = a.size(-1) / 2;
      return at::silu(a.narrow(-1, 0, h)) * a.narrow(-1, h, h);
    }
    case MlpKind::kGelu: break;
  }
  return FusedKernelsApply(a) ? FusedGelu(a) : at::gelu(a);  // erf form, at::gelu's default
}

namespace {

// [..., rows, kv_heads · hd] -> [..., rows, kv_heads · group · hd]: each key
// or value head repeated for the group of query heads it serves (a view
// when group == 1).
at::Tensor RepeatKvHeads(const at::Tensor& z, int kv_heads, int64_t group) {
  if (group == 1) return z;
  at::DimVector shape(z.sizes().begin(), z.sizes().end());
  const int64_t hd = shape.back() / kv_heads;
  shape.back() = kv_heads;
  shape.push_back(1);
  shape.push_back(hd);
  at::DimVector expanded = shape;
  expanded[expanded.size() - 2] = group;
  at::DimVector out(z.sizes().begin(), z.sizes().end());
  out.back() = kv_heads * group * hd;
  return z.reshape(shape).expand(expanded).reshape(out);
}

}  // namespace

at::Tensor ApplyLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                       const ForwardContext& ctx) {
  if (ctx.store != nullptr) return SplitLinear(x, weight, bias, ctx.store);
  return torch::nn::functional::linear(x, weight, bias);
}

BlockSpec BlockSpecOf(const ModelConfig& config) {
  BlockSpec spec;
  spec.n_heads = config.n_heads;
  spec.n_kv_heads = config.kv_heads();
  spec.rms_norm = config.norm == NormKind::kRmsNorm;
  spec.norm_eps = config.norm_eps;
  spec.mlp = config.mlp;
  spec.rope = config.rope();
  spec.dropout = config.dropout;
  return spec;
}

at::Tensor Norm(const BlockSpec& spec, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  if (!spec.rms_norm) return at::layer_norm(x, {weight.size(0)}, weight, bias, spec.norm_eps);
  if (FusedKernelsApply(x) && FusedKernelsApply(weight)) return FusedRmsNorm(x, weight, spec.norm_eps);
  return x * at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + spec.norm_eps) * weight;
}

at::Tensor RotaryFrequencies(const ModelConfig& config) {
  const int half = config.head_dim() / 2;
  std::vector<float> freq(half);
  for (int i = 0; i < half; ++i) {
    double f = std::pow(config.rope_theta, -2.0 * i / config.head_dim());
    if (config.rope_scaling == RopeScaling::kLlama3) {
      // Llama 3.1: long wavelengths slowed by `factor`, short ones kept,
      // a smooth blend in between (Hugging Face's _compute_llama3_parameters).
      const double wavelength = 2 * M_PI / f, context = config.rope_original_context;
      const double low = config.rope_low_freq_factor, high = config.rope_high_freq_factor;
      if (wavelength > context / low) {
        f /= config.rope_factor;
      } else if (wavelength >= context / high) {
        const double smooth = (context / wavelength - low) / (high - low);
        f = (1 - smooth) * f / config.rope_factor + smooth * f;
      }
    }
    freq[i] = static_cast<float>(f);
  }
  return at::tensor(freq, at::kFloat);
}

RotaryAngles RotaryAnglesAt(const at::Tensor& frequencies, const at::Tensor& positions) {
  at::Tensor angles = positions.to(at::kFloat).unsqueeze(1) * frequencies.unsqueeze(0);
  return RotaryAngles{angles.cos(), angles.sin()};
}

at::Tensor ApplyRotary(const at::Tensor& x, int heads, const RotaryAngles& angles) {
  at::DimVector shape(x.sizes().begin(), x.sizes().end());
  const int64_t hd = shape.back() / heads, half = hd / 2;
  shape.back() = heads;
  shape.push_back(hd);
  at::Tensor z = x.reshape(shape);
  at::Tensor x1 = z.narrow(-1, 0, half), x2 = z.narrow(-1, half, half);
  at::Tensor c = angles.cos.unsqueeze(-2), s = angles.sin.unsqueeze(-2);  // [rows, 1, half]
  return at::cat({x1 * c - x2 * s, x2 * c + x1 * s}, -1).reshape(x.sizes());
}

at::Tensor Dropout(const at::Tensor& x, double p, const ForwardContext& ctx) {
  if (p <= 0.0 || ctx.dropout == nullptr) return x;
  at::Tensor keep = at::empty_like(x).bernoulli_(1.0 - p, *ctx.dropout);
  return x * keep / (1.0 - p);
}

at::Tensor EmbedTokens(const at::Tensor& tok_emb, const at::Tensor& tokens,
                       const at::Tensor& positions) {
  at::Tensor x = at::embedding(tok_emb, tokens);
  return positions.defined() ? x + positions : x;
}

at::Tensor HeadLogits(const BlockSpec& spec, const at::Tensor& ln_weight, const at::Tensor& ln_bias,
                      const at::Tensor& lm_head, const at::Tensor& x, const ForwardContext& ctx) {
  return ApplyLinear(Norm(spec, x, ln_weight, ln_bias), lm_head, at::Tensor(), ctx);
}

at::Tensor BlockQkv(const BlockTensors& block, const BlockSpec& spec, const at::Tensor& x,
                    const ForwardContext& ctx) {
  return ApplyLinear(Norm(spec, x, block.ln1_weight, block.ln1_bias), block.qkv_weight, block.qkv_bias, ctx);
}

at::Tensor CausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           int64_t start, int n_heads, double dropout, const ForwardContext& ctx) {
  // Without dropout on the weights, the fused kernel (model/fused_kernels.h);
  // with it, the op-by-op formulation below, whose draws the mask takes.
  // Grouped-query attention: each key/value head repeated for its group
  // (the kernels read one head per query head).
  const int64_t hd = q.size(-1) / n_heads;
  const int kv_heads = static_cast<int>(k.size(-1) / hd);
  const at::Tensor keys = RepeatKvHeads(k, kv_heads, n_heads / kv_heads);
  const at::Tensor values = RepeatKvHeads(v, kv_heads, n_heads / kv_heads);
  if (DropoutOff(dropout, ctx) && FusedKernelsApply(q) && FusedKernelsApply(keys) && FusedKernelsApply(values)) {
    return FusedCausalAttention(q, keys, values, start, n_heads);
  }
  const int64_t n = q.size(-2), length = keys.size(-2);
  at::Tensor scores = at::matmul(SplitHeads(q, n_heads), SplitHeads(keys, n_heads).transpose(-2, -1)) *
                      (1.0 / std::sqrt(double(hd)));
  // Query i sits at position start + i and sees keys 0 .. start + i. A single
  // query (a decode step) sees every key given: nothing to mask.
  if (n > 1) {
    at::Tensor future =
        at::ones({n, length}, at::TensorOptions().dtype(at::kBool)).triu(start + 1);
    scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  }
  at::Tensor weights = Dropout(at::softmax(scores, -1), dropout, ctx);
  return at::matmul(weights, SplitHeads(values, n_heads)).transpose(-3, -2).reshape(q.sizes());
}

at::Tensor BlockOutput(const BlockTensors& block, const BlockSpec& spec, const at::Tensor& x,
                       const at::Tensor& attended, const ForwardContext& ctx) {
  at::Tensor h = x + Dropout(ApplyLinear(attended, block.proj_weight, block.proj_bias, ctx), spec.dropout, ctx);
  at::Tensor up = MlpActivation(
      spec.mlp, ApplyLinear(Norm(spec, h, block.ln2_weight, block.ln2_bias), block.fc_weight, block.fc_bias, ctx));
  return h + Dropout(ApplyLinear(up, block.mlp_weight, block.mlp_bias, ctx), spec.dropout, ctx);
}

at::Tensor BlockForward(const BlockTensors& block, const BlockSpec& spec, const at::Tensor& x,
                        const ForwardContext& ctx) {
  at::Tensor qkv = BlockQkv(block, spec, x, ctx);
  const int64_t d = x.size(-1), kv = (qkv.size(-1) - d) / 2;
  const bool plain = !spec.rope && spec.n_kv_heads == spec.n_heads;
  if (!plain) {
    // Rotated q and k, and the key/value heads repeated per group, as the
    // [B, T, 3d] tensor plain multi-head attention reads.
    PW_CHECK(!spec.rope || ctx.rotary != nullptr, "BlockForward: a rope model needs ctx.rotary");
    if (spec.rope && FusedKernelsApply(qkv) && qkv.dim() == 3 && ctx.rotary->cos.size(0) == qkv.size(1)) {
      // One pass: rotation and the repeated heads, one gradient back.
      qkv = FusedRotaryQkv(qkv, ctx.rotary->cos, ctx.rotary->sin, spec.n_heads, spec.n_kv_heads);
    } else {
      at::Tensor q = qkv.narrow(-1, 0, d), k = qkv.narrow(-1, d, kv), v = qkv.narrow(-1, d + kv, kv);
      if (spec.rope) {
        q = ApplyRotary(q, spec.n_heads, *ctx.rotary);
        k = ApplyRotary(k, spec.n_kv_heads, *ctx.rotary);
      }
      const int64_t group = spec.n_heads / spec.n_kv_heads;
      qkv = at::cat({q, RepeatKvHeads(k, spec.n_kv_heads, group), RepeatKvHeads(v, spec.n_kv_heads, group)}, -1);
    }
  }
  // Whole sequences attend over themselves: the fused kernel reads q, k, v
  // from qkv in place and returns one gradient for it.
  if (DropoutOff(spec.dropout, ctx) && FusedKernelsApply(qkv) && qkv.dim() == 3) {
    return BlockOutput(block, spec, x, FusedSelfAttention(qkv, spec.n_heads), ctx);
  }
  std::vector<at::Tensor> parts = qkv.split(d, /*dim=*/-1);
  at::Tensor attended = CausalAttention(parts[0], parts[1], parts[2], /*start=*/0, spec.n_heads, spec.dropout, ctx);
  return BlockOutput(block, spec, x, attended, ctx);
}

}  // namespace pw
