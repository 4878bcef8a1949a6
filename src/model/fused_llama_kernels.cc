#include "model/fused_llama_kernels.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace pw {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Rows per parallel task: enough work to amortise a task, small enough to
// spread a microbatch over the intra-op threads.
constexpr int64_t kRowGrain = 16;

class RmsNormFunction : public torch::autograd::Function<RmsNormFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& weight_in, double eps) {
    const at::Tensor x = x_in.contiguous(), weight = weight_in.contiguous();
    const int64_t d = x.size(-1), rows = x.numel() / d;
    at::Tensor y = at::empty_like(x);
    at::Tensor scale = at::empty({rows}, x.options());
    const float* xp = x.data_ptr<float>();
    const float* wp = weight.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    float* sp = scale.data_ptr<float>();
    at::parallel_for(0, rows, kRowGrain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* xr = xp + r * d;
        float* yr = yp + r * d;
        float sum = 0;
        for (int64_t i = 0; i < d; ++i) sum += xr[i] * xr[i];
        const float s = 1.0f / std::sqrt(sum / static_cast<float>(d) + static_cast<float>(eps));
        sp[r] = s;
        for (int64_t i = 0; i < d; ++i) yr[i] = xr[i] * s * wp[i];
      }
    });
    ctx->save_for_backward({x, weight, scale});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& scale = saved[2];
    const at::Tensor dy = grad_outputs[0].contiguous();
    const int64_t d = x.size(-1), rows = x.numel() / d;
    at::Tensor dx = at::empty_like(x);
    const float* xp = x.data_ptr<float>();
    const float* wp = weight.data_ptr<float>();
    const float* sp = scale.data_ptr<float>();
    const float* gp = dy.data_ptr<float>();
    float* dxp = dx.data_ptr<float>();
    // y = x·s·w with s = (mean(x²) + eps)^-1/2, so ds/dx_i = -s³ x_i / d and
    // dx = s·(dy ⊙ w) − x · s³/d · Σ_j dy_j w_j x_j.
    at::parallel_for(0, rows, kRowGrain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* xr = xp + r * d;
        const float* gr = gp + r * d;
        float* dr = dxp + r * d;
        const float s = sp[r];
        float dot = 0;
        for (int64_t i = 0; i < d; ++i) dot += gr[i] * wp[i] * xr[i];
        const float c = s * s * s * dot / static_cast<float>(d);
        for (int64_t i = 0; i < d; ++i) dr[i] = s * gr[i] * wp[i] - c * xr[i];
      }
    });
    // dweight_i = Σ_rows dy_i x_i s, rows in order (deterministic).
    at::Tensor dw = at::zeros({d}, x.options());
    float* dwp = dw.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = xp + r * d;
      const float* gr = gp + r * d;
      const float s = sp[r];
      for (int64_t i = 0; i < d; ++i) dwp[i] += gr[i] * xr[i] * s;
    }
    return {dx, dw, at::Tensor()};
  }
};

// Rotates one head of `half`·2 values: out = (x1·c − x2·s, x2·c + x1·s).
inline void Rotate(const float* x, const float* c, const float* s, int64_t half, float* out) {
  for (int64_t i = 0; i < half; ++i) {
    const float x1 = x[i], x2 = x[half + i];
    out[i] = x1 * c[i] - x2 * s[i];
    out[half + i] = x2 * c[i] + x1 * s[i];
  }
}

// The transpose: dx = (dy1·c + dy2·s, dy2·c − dy1·s), added to `out`.
inline void AddUnrotated(const float* dy, const float* c, const float* s, int64_t half, float* out) {
  for (int64_t i = 0; i < half; ++i) {
    const float g1 = dy[i], g2 = dy[half + i];
    out[i] += g1 * c[i] + g2 * s[i];
    out[half + i] += g2 * c[i] - g1 * s[i];
  }
}

class RotaryQkvFunction : public torch::autograd::Function<RotaryQkvFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& qkv_in, const at::Tensor& cos_in,
                            const at::Tensor& sin_in, int64_t n_heads, int64_t n_kv_heads) {
    const at::Tensor qkv = qkv_in.contiguous(), cos = cos_in.contiguous(), sin = sin_in.contiguous();
    const int64_t batch = qkv.size(0), t = qkv.size(1), width = qkv.size(2);
    const int64_t hd = (width / (n_heads + 2 * n_kv_heads)), d = hd * n_heads, kv = hd * n_kv_heads;
    const int64_t half = hd / 2, group = n_heads / n_kv_heads;
    TORCH_CHECK(cos.size(0) >= t && cos.size(1) == half, "FusedRotaryQkv: cos/sin must be [T, head_dim/2]");
    at::Tensor out = at::empty({batch, t, 3 * d}, qkv.options());
    const float* in = qkv.data_ptr<float>();
    const float* cp = cos.data_ptr<float>();
    const float* sp = sin.data_ptr<float>();
    float* op = out.data_ptr<float>();
    at::parallel_for(0, batch * t, kRowGrain, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t pos = row % t;
        const float* c = cp + pos * half;
        const float* s = sp + pos * half;
        const float* x = in + row * width;
        float* y = op + row * 3 * d;
        for (int64_t h = 0; h < n_heads; ++h) Rotate(x + h * hd, c, s, half, y + h * hd);
        for (int64_t kh = 0; kh < n_kv_heads; ++kh) {
          float* first = y + d + kh * group * hd;
          Rotate(x + d + kh * hd, c, s, half, first);
          for (int64_t g = 1; g < group; ++g) std::copy(first, first + hd, first + g * hd);
          const float* v = x + d + kv + kh * hd;
          for (int64_t g = 0; g < group; ++g) std::copy(v, v + hd, y + 2 * d + (kh * group + g) * hd);
        }
      }
    });
    ctx->save_for_backward({cos, sin});
    ctx->saved_data["n_heads"] = n_heads;
    ctx->saved_data["n_kv_heads"] = n_kv_heads;
    ctx->saved_data["width"] = width;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& cos = saved[0];
    const at::Tensor& sin = saved[1];
    const int64_t n_heads = ctx->saved_data["n_heads"].toInt(), n_kv_heads = ctx->saved_data["n_kv_heads"].toInt();
    const int64_t width = ctx->saved_data["width"].toInt();
    const at::Tensor dy = grad_outputs[0].contiguous();
    const int64_t batch = dy.size(0), t = dy.size(1);
    const int64_t hd = width / (n_heads + 2 * n_kv_heads), d = hd * n_heads, kv = hd * n_kv_heads;
    const int64_t half = hd / 2, group = n_heads / n_kv_heads;
    at::Tensor dqkv = at::zeros({batch, t, width}, dy.options());
    const float* gp = dy.data_ptr<float>();
    const float* cp = cos.data_ptr<float>();
    const float* sp = sin.data_ptr<float>();
    float* op = dqkv.data_ptr<float>();
    at::parallel_for(0, batch * t, kRowGrain, [&](int64_t begin, int64_t end) {
      std::vector<float> summed(static_cast<size_t>(hd));
      for (int64_t row = begin; row < end; ++row) {
        const int64_t pos = row % t;
        const float* c = cp + pos * half;
        const float* s = sp + pos * half;
        const float* g = gp + row * 3 * d;
        float* dx = op + row * width;
        for (int64_t h = 0; h < n_heads; ++h) AddUnrotated(g + h * hd, c, s, half, dx + h * hd);
        for (int64_t kh = 0; kh < n_kv_heads; ++kh) {
          // The group's copies of a key head share one gradient: their sum,
          // in group order, then the inverse rotation.
          std::fill(summed.begin(), summed.end(), 0.0f);
          for (int64_t q = 0; q < group; ++q) {
            const float* gk = g + d + (kh * group + q) * hd;
            for (int64_t i = 0; i < hd; ++i) summed[i] += gk[i];
          }
          AddUnrotated(summed.data(), c, s, half, dx + d + kh * hd);
          float* dv = dx + d + kv + kh * hd;
          for (int64_t q = 0; q < group; ++q) {
            const float* gv = g + 2 * d + (kh * group + q) * hd;
            for (int64_t i = 0; i < hd; ++i) dv[i] += gv[i];
          }
        }
      }
    });
    return {dqkv, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor FusedRmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  return RmsNormFunction::apply(x, weight, eps);
}

at::Tensor FusedRotaryQkv(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin, int n_heads,
                          int n_kv_heads) {
  return RotaryQkvFunction::apply(qkv, cos, sin, static_cast<int64_t>(n_heads), static_cast<int64_t>(n_kv_heads));
}

}  // namespace pw
