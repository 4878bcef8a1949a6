// gpt_math: the block's parts compose into the training block, and
// attention over a K/V history (inference's use: new queries at positions
// [start, start + n) over keys [0, start + n)) gives the rows of the
// whole-sequence causal attention, so a prefill-then-decode reproduces the
// training forward.
//
// Tolerance: the chunked attention runs GEMMs of other shapes than the whole
// sequence's, so BLAS may sum a dot product in another order: rounding of
// fp32 sums of a few dozen O(1) terms, well under 1e-5.
#include "model/gpt_math.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>

#include "model/block_test_util.h"
#include "model/gpt.h"

namespace pw {
namespace {

// The default config (4 heads), narrower, with logits far from flat.
ModelConfig SmallConfig(bool bias) {
  ModelConfig c;
  c.d_model = 32;
  c.bias = bias;
  c.init_std = 0.2;
  return c;
}

TEST(GptMathTest, AttentionOverHistoryMatchesWholeSequenceRows) {
  c10::NoGradGuard no_grad;
  at::manual_seed(5);
  const int64_t t = 13, d = 32;
  const int n_heads = 4;
  at::Tensor q = at::randn({t, d}), k = at::randn({t, d}), v = at::randn({t, d});
  at::Tensor whole = CausalAttention(q, k, v, 0, n_heads, 0.0, ForwardContext{});
  // A prefill of 6 rows, a chunk of 4, then single decode steps.
  for (auto [start, n] : {std::pair<int64_t, int64_t>{0, 6}, {6, 4}, {10, 1}, {11, 1}, {12, 1}}) {
    at::Tensor got = CausalAttention(q.narrow(0, start, n), k.narrow(0, 0, start + n),
                                     v.narrow(0, 0, start + n), start, n_heads, 0.0,
                                     ForwardContext{});
    at::Tensor want = whole.narrow(0, start, n);
    EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-5))
        << "rows [" << start << ", " << start + n << "): max diff "
        << (got - want).abs().max().item<float>();
  }
  // Batched leading dims ([B, T, d], training's layout) give each sequence's rows.
  at::Tensor batch = at::stack({q, q.flip(0)});
  at::Tensor batched = CausalAttention(batch, at::stack({k, k}), at::stack({v, v}), 0, n_heads,
                                       0.0, ForwardContext{});
  EXPECT_TRUE(at::allclose(batched[0], whole, 1e-5, 1e-5));
}

class GptMathBlockTest : public ::testing::TestWithParam<bool> {};

TEST_P(GptMathBlockTest, PartsOverChunksMatchBlockForward) {
  c10::NoGradGuard no_grad;
  const ModelConfig config = SmallConfig(GetParam());
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(3);
  Block module(config, gen);
  std::map<std::string, at::Tensor> p;
  for (const auto& item : module.named_parameters()) p[item.key()] = item.value();
  const BlockTensors block = BlockTensorsOf(p);
  ASSERT_TRUE(block.qkv_weight.defined() && block.mlp_weight.defined());
  EXPECT_EQ(block.qkv_bias.defined(), GetParam());

  const int64_t t = 11, d = config.d_model;
  at::Tensor x = at::empty({2, t, d}).normal_(0.0, 1.0, gen);
  at::Tensor expected = module.Forward(x, ForwardContext{});
  // The module's forward is BlockForward over its parameters, op for op.
  const BlockSpec spec = BlockSpecOf(config);
  EXPECT_TRUE(at::equal(expected, BlockForward(block, spec, x, ForwardContext{})));
  // Inference's decomposition: one sequence's rows, a prefill of 7 then 4
  // decode steps, keys and values accumulated as a cache would.
  at::Tensor row_in = x[1];
  at::Tensor qkv = BlockQkv(block, spec, row_in, ForwardContext{});
  for (auto [start, n] : {std::pair<int64_t, int64_t>{0, 7}, {7, 1}, {8, 1}, {9, 1}, {10, 1}}) {
    at::Tensor q = qkv.narrow(0, start, n).narrow(1, 0, d);
    at::Tensor k = qkv.narrow(0, 0, start + n).narrow(1, d, d);
    at::Tensor v = qkv.narrow(0, 0, start + n).narrow(1, 2 * d, d);
    at::Tensor attended = CausalAttention(q, k, v, start, config.n_heads, 0.0, ForwardContext{});
    at::Tensor got =
        BlockOutput(block, spec, row_in.narrow(0, start, n), attended, ForwardContext{});
    at::Tensor want = expected[1].narrow(0, start, n);
    EXPECT_TRUE(at::allclose(got, want, 1e-5, 1e-5))
        << "rows [" << start << ", " << start + n << "): max diff "
        << (got - want).abs().max().item<float>();
  }
}

INSTANTIATE_TEST_SUITE_P(Bias, GptMathBlockTest, ::testing::Bool());

TEST(GptMathTest, DropoutOffIsTheIdentity) {
  at::Tensor x = at::randn({3, 4});
  EXPECT_TRUE(Dropout(x, 0.0, ForwardContext{}).is_same(x));
  EXPECT_TRUE(Dropout(x, 0.5, ForwardContext{}).is_same(x));  // no generator: evaluation
}

}  // namespace
}  // namespace pw
