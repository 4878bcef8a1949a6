// The fused RMSNorm and rotation kernels against the same arithmetic
// written here op by op in LibTorch (double precision): values and
// gradients, grouped and ungrouped heads.
#include "model/fused_llama_kernels.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

namespace pw {
namespace {

double MaxRelative(const at::Tensor& got, const at::Tensor& want) {
  return ((got.to(at::kDouble) - want).abs().max() / (want.abs().max() + 1e-12)).item<double>();
}

TEST(FusedRmsNorm, MatchesTheFormulaAndItsGradients) {
  at::manual_seed(3);
  const double eps = 1e-5;
  at::Tensor x = at::randn({3, 5, 64}).requires_grad_(true);
  at::Tensor w = (1 + 0.1 * at::randn({64})).requires_grad_(true);
  at::Tensor y = FusedRmsNorm(x, w, eps);
  at::Tensor xd = x.detach().to(at::kDouble).requires_grad_(true);
  at::Tensor wd = w.detach().to(at::kDouble).requires_grad_(true);
  at::Tensor yd = xd * at::rsqrt(xd.pow(2).mean(-1, true) + eps) * wd;
  EXPECT_LT(MaxRelative(y, yd), 1e-6);
  at::Tensor dy = at::randn({3, 5, 64});
  auto got = torch::autograd::grad({y}, {x, w}, {dy});
  auto want = torch::autograd::grad({yd}, {xd, wd}, {dy.to(at::kDouble)});
  EXPECT_LT(MaxRelative(got[0], want[0]), 1e-5);
  EXPECT_LT(MaxRelative(got[1], want[1]), 1e-5);
}

// Half-layout rotation of [B, T, heads·hd] by cos/sin [T, hd/2], in double.
at::Tensor Rotated(const at::Tensor& x, int heads, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t b = x.size(0), t = x.size(1), hd = x.size(2) / heads, half = hd / 2;
  at::Tensor z = x.reshape({b, t, heads, hd});
  at::Tensor x1 = z.narrow(-1, 0, half), x2 = z.narrow(-1, half, half);
  at::Tensor c = cos.unsqueeze(1), s = sin.unsqueeze(1);  // [T, 1, half]
  return at::cat({x1 * c - x2 * s, x2 * c + x1 * s}, -1).reshape({b, t, heads * hd});
}

// Each of `heads` heads of [B, T, heads·hd] repeated `group` times in place.
at::Tensor Repeated(const at::Tensor& x, int heads, int group) {
  const int64_t b = x.size(0), t = x.size(1), hd = x.size(2) / heads;
  return x.reshape({b, t, heads, 1, hd}).expand({b, t, heads, group, hd}).reshape({b, t, heads * group * hd});
}

void CheckRotaryQkv(int n_heads, int n_kv_heads) {
  at::manual_seed(5 + n_kv_heads);
  const int hd = 8, t = 7, d = n_heads * hd, kv = n_kv_heads * hd;
  at::Tensor qkv = at::randn({2, t, d + 2 * kv}).requires_grad_(true);
  at::Tensor angles = at::randn({t, hd / 2});
  at::Tensor cos = angles.cos(), sin = angles.sin();
  at::Tensor out = FusedRotaryQkv(qkv, cos, sin, n_heads, n_kv_heads);

  at::Tensor ref_in = qkv.detach().to(at::kDouble).requires_grad_(true);
  const at::Tensor cd = cos.to(at::kDouble), sd = sin.to(at::kDouble);
  const int group = n_heads / n_kv_heads;
  at::Tensor ref = at::cat({Rotated(ref_in.narrow(-1, 0, d), n_heads, cd, sd),
                            Repeated(Rotated(ref_in.narrow(-1, d, kv), n_kv_heads, cd, sd), n_kv_heads, group),
                            Repeated(ref_in.narrow(-1, d + kv, kv), n_kv_heads, group)},
                           -1);
  ASSERT_EQ(out.sizes(), ref.sizes());
  EXPECT_LT(MaxRelative(out, ref), 1e-6);
  at::Tensor dy = at::randn(out.sizes());
  auto got = torch::autograd::grad({out}, {qkv}, {dy});
  auto want = torch::autograd::grad({ref}, {ref_in}, {dy.to(at::kDouble)});
  EXPECT_LT(MaxRelative(got[0], want[0]), 1e-6);
}

TEST(FusedRotaryQkv, MatchesRotationAndRepeatedHeadsWithGradients) {
  CheckRotaryQkv(4, 4);  // multi-head: no repetition
  CheckRotaryQkv(4, 2);  // grouped: two query heads per key/value head
  CheckRotaryQkv(4, 1);  // one key/value head for all
}

}  // namespace
}  // namespace pw
