// layer_math: the split block (PreAttention, attention, PostAttention) and
// the embedding/head reproduce model/gpt.cc's Block::Forward and
// GptSegment::ForwardLogits on random inputs, with biases and without.
#include "infer/layer_math.h"
#include "infer/infer_test_util.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/module.h>

#include <cmath>

#include "model/gpt.h"

namespace pw {
namespace {

ModelConfig SmallConfig(bool bias) { return SmallTestConfig(64, 3, 32, bias); }

// Causal attention of one sequence written with explicit per-row loops
// (independent of both gpt.cc's and decoder.cc's masked-matrix form).
at::Tensor NaiveAttention(const at::Tensor& qkv, int n_heads) {
  const int64_t t = qkv.size(0), d = qkv.size(1) / 3, hd = d / n_heads;
  at::Tensor out = at::zeros({t, d});
  for (int h = 0; h < n_heads; ++h) {
    at::Tensor q = qkv.narrow(1, h * hd, hd), k = qkv.narrow(1, d + h * hd, hd),
               v = qkv.narrow(1, 2 * d + h * hd, hd);
    for (int64_t i = 0; i < t; ++i) {
      at::Tensor s = k.narrow(0, 0, i + 1).matmul(q[i]) / std::sqrt(double(hd));
      at::Tensor w = at::softmax(s, 0);
      out[i].narrow(0, h * hd, hd).copy_(w.matmul(v.narrow(0, 0, i + 1)));
    }
  }
  return out;
}

at::Tensor SplitBlock(const BlockWeights& block, const at::Tensor& x, int n_heads) {
  at::Tensor qkv = PreAttention(block, x);
  return PostAttention(block, x, NaiveAttention(qkv, n_heads));
}

// The whole model as inference runs it (embedding, split blocks, head)
// against model/gpt.cc's ForwardLogits on 17 random tokens.
void ExpectWholeModelMatches(const ModelWeights& weights, GptSegment& model) {
  const ModelConfig& config = weights.config;
  at::Tensor tokens = at::randint(0, config.vocab_size, {1, 17}, at::kLong);
  at::Tensor expected = model.ForwardLogits(tokens, ForwardContext{})[0];
  at::Tensor x = Embed(weights, tokens[0], at::arange(17, at::kLong));
  for (int layer = 0; layer < config.n_layers; ++layer) {
    x = SplitBlock(weights.blocks[layer], x, config.n_heads);
  }
  at::Tensor got = HeadLogits(weights, x);
  ASSERT_EQ(got.sizes(), expected.sizes());
  EXPECT_TRUE(at::allclose(got, expected, 1e-4, 1e-4))
      << "max diff " << (got - expected).abs().max().item<float>();
  // Logits spread far beyond that tolerance: the comparison is meaningful.
  EXPECT_GT(expected.std().item<float>(), 0.5);
}

class LayerMathTest : public ::testing::TestWithParam<bool> {};

TEST_P(LayerMathTest, BlockMatchesBlockForward) {
  c10::NoGradGuard no_grad;
  const ModelConfig config = SmallConfig(GetParam());
  StageSpan span;
  span.first_block = 1;
  span.num_blocks = 1;
  GptSegment segment(config, span, /*seed=*/7);
  Result<ModelWeights> weights = LoadModelWeights({"", config, 7}, {1});
  ASSERT_TRUE(weights.ok()) << weights.status().ToString();
  at::manual_seed(3);
  at::Tensor x = at::randn({2, 11, config.d_model});
  at::Tensor expected = segment.ForwardLogits(x, ForwardContext{});
  for (int64_t b = 0; b < 2; ++b) {
    at::Tensor got = SplitBlock(weights->blocks[1], x[b], config.n_heads);
    EXPECT_TRUE(at::allclose(got, expected[b], 1e-5, 1e-5))
        << "max diff " << (got - expected[b]).abs().max().item<float>();
  }
}

TEST_P(LayerMathTest, WholeModelMatchesForwardLogits) {
  c10::NoGradGuard no_grad;
  const ModelConfig config = SmallConfig(GetParam());
  GptSegment model(config, WholeModelSpan(config), /*seed=*/11);
  Result<ModelWeights> weights = LoadModelWeights({"", config, 11}, {}, /*keep_all=*/true);
  ASSERT_TRUE(weights.ok()) << weights.status().ToString();
  ExpectWholeModelMatches(*weights, model);
}

// Prepacked blocks (oneDNN, bias/GELU/residual inside the matmuls) give
// the same block and the same model, to fp32 rounding.
TEST_P(LayerMathTest, PrepackedBlocksMatchTheReference) {
  c10::NoGradGuard no_grad;
  const ModelConfig config = SmallConfig(GetParam());
  if (!BlockPrepackable(config)) GTEST_SKIP() << "no prepacked kernels on this CPU (AVX-512 only)";
  GptSegment model(config, WholeModelSpan(config), /*seed=*/11);
  Result<ModelWeights> weights = LoadModelWeights({"", config, 11}, {}, /*keep_all=*/true);
  ASSERT_TRUE(weights.ok()) << weights.status().ToString();
  Result<ModelWeights> plain = LoadModelWeights({"", config, 11}, {}, /*keep_all=*/true);
  ASSERT_TRUE(plain.ok());
  for (BlockWeights& block : weights->blocks) {
    PrepackBlock(block, config);
    EXPECT_TRUE(block.prepacked);
    // Read as [out, in] it would be scrambled: it is 1-D, so such code fails on the shape.
    EXPECT_EQ(block.fc_weight.dim(), 1);
  }
  // Flattened and unflattened as the weight pool moves blocks, it stays prepacked.
  const BlockWeights moved = UnpackBlock(PackBlock(weights->blocks[0]), config, /*prepacked=*/true);
  EXPECT_TRUE(moved.prepacked);
  EXPECT_TRUE(at::equal(moved.qkv_weight, weights->blocks[0].qkv_weight));

  at::manual_seed(3);
  const at::Tensor x0 = at::randn({13, config.d_model});
  EXPECT_TRUE(at::allclose(SplitBlock(weights->blocks[0], x0, config.n_heads),
                           SplitBlock(plain->blocks[0], x0, config.n_heads), 1e-5, 1e-5));
  ExpectWholeModelMatches(*weights, model);
}

TEST(LayerMathEmbedTest, RowsAtAnyPositions) {
  c10::NoGradGuard no_grad;
  const ModelConfig config = SmallConfig(true);
  Result<ModelWeights> w = LoadModelWeights({"", config, 5}, {});
  ASSERT_TRUE(w.ok());
  at::Tensor tokens = at::tensor(std::vector<int64_t>{5, 200, 7}, at::kLong);
  at::Tensor positions = at::tensor(std::vector<int64_t>{9, 0, 31}, at::kLong);
  at::Tensor got = Embed(*w, tokens, positions);
  for (int i = 0; i < 3; ++i) {
    at::Tensor want = w->tok_emb[tokens[i].item<int64_t>()] + w->pos_emb[positions[i].item<int64_t>()];
    EXPECT_TRUE(at::equal(got[i], want));
  }
}

INSTANTIATE_TEST_SUITE_P(Bias, LayerMathTest, ::testing::Bool());

}  // namespace
}  // namespace pw
