// prepacked_linear: oneDNN's matmul over weights packed once gives what
// at::linear (OpenBLAS) gives, with each epilogue, bias or not, at the row
// counts a run meets (one decode row, odd sizes, a full batch, a prefill).
#include "infer/prepacked_linear.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <tuple>

namespace pw {
namespace {

// (rows, bias)
class PrepackedLinearTest : public ::testing::TestWithParam<std::tuple<int64_t, bool>> {};

TEST_P(PrepackedLinearTest, MatchesAtLinearWithEveryEpilogue) {
  const auto [rows, with_bias] = GetParam();
  // The yardstick's four shapes (d = 256): qkv, proj, fc, mlp.
  const std::pair<int64_t, int64_t> shapes[] = {{768, 256}, {256, 256}, {1024, 256}, {256, 1024}};
  if (!PrepackableLinear(768, 256)) GTEST_SKIP() << "no prepacked kernels on this CPU (AVX-512 only)";
  at::manual_seed(5);
  for (auto [out, in] : shapes) {
    ASSERT_TRUE(PrepackableLinear(out, in)) << out << " x " << in;
    const at::Tensor w = at::randn({out, in}) * 0.05, x = at::randn({rows, in});
    const at::Tensor b = with_bias ? at::randn({out}) : at::Tensor();
    const at::Tensor residual = at::randn({rows, out});
    at::Tensor packed = at::empty({out * in});
    PrepackLinearWeight(w, packed);
    // The layout is not the plain one (else nothing was packed).
    EXPECT_FALSE(at::equal(packed, w.reshape({-1})));
    const at::Tensor linear = at::linear(x, w, b);
    const struct {
      LinearEpilogue epilogue;
      at::Tensor want;
    } cases[] = {{LinearEpilogue::kNone, linear},
                 {LinearEpilogue::kGelu, at::gelu(linear)},
                 {LinearEpilogue::kResidual, linear + residual}};
    for (const auto& c : cases) {
      const at::Tensor got = PrepackedLinear(x, packed, out, b, c.epilogue, residual);
      ASSERT_EQ(got.sizes(), c.want.sizes());
      EXPECT_TRUE(at::allclose(got, c.want, 1e-5, 1e-4))
          << out << " x " << in << " rows " << rows << " epilogue " << static_cast<int>(c.epilogue)
          << ": max diff " << (got - c.want).abs().max().item<float>();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RowsAndBias, PrepackedLinearTest,
                         ::testing::Combine(::testing::Values(1, 7, 128, 300), ::testing::Bool()));

TEST(PrepackedLinearShapeTest, EmptyShapesAreNotPackable) {
  EXPECT_FALSE(PrepackableLinear(0, 256));
  EXPECT_FALSE(PrepackableLinear(256, 0));
}

TEST(PrepackedLinearShapeTest, ZeroRowsGiveAnEmptyResult) {
  if (!PrepackableLinear(256, 256)) GTEST_SKIP() << "no prepacked kernels on this CPU";
  at::Tensor packed = at::empty({256 * 256});
  PrepackLinearWeight(at::randn({256, 256}), packed);
  const at::Tensor y = PrepackedLinear(at::empty({0, 256}), packed, 256, at::Tensor(), LinearEpilogue::kNone);
  EXPECT_EQ(y.sizes(), (at::IntArrayRef{0, 256}));
}

}  // namespace
}  // namespace pw
