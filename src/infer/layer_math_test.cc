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

// Packed blocks — oneDNN's prepacked layout (bias/GELU/residual inside the
// matmuls; AVX-512 CPUs only) and pipewright's panels (every CPU; the head
// packed too) — give the same block and the same model, to fp32 rounding.
TEST_P(LayerMathTest, PackedBlocksMatchTheReference) {
  c10::NoGradGuard no_grad;
  const ModelConfig config = SmallConfig(GetParam());
  for (LinearLayout layout : {LinearLayout::kOneDnn, LinearLayout::kPanels}) {
    SCOPED_TRACE(LinearLayoutName(layout));
    if (layout == LinearLayout::kOneDnn && !BlockPrepackable(config)) {
      std::printf("note: no oneDNN prepacked kernels on this CPU (AVX-512 only): that layout is not checked\n");
      continue;
    }
    GptSegment model(config, WholeModelSpan(config), /*seed=*/11);
    Result<ModelWeights> weights = LoadModelWeights({"", config, 11}, {}, /*keep_all=*/true);
    ASSERT_TRUE(weights.ok()) << weights.status().ToString();
    Result<ModelWeights> plain = LoadModelWeights({"", config, 11}, {}, /*keep_all=*/true);
    ASSERT_TRUE(plain.ok());
    PackWeights(*weights, layout);
    for (const BlockWeights& block : weights->blocks) {
      EXPECT_EQ(block.layout, layout);
      // Read as [out, in] it would be scrambled: it is 1-D, so such code fails on the shape.
      EXPECT_EQ(block.fc_weight.dim(), 1);
    }
    EXPECT_EQ(weights->head_layout, layout == LinearLayout::kPanels ? layout : LinearLayout::kPlain);
    // Flattened and unflattened as the weight pool moves blocks, it keeps its layout.
    const BlockWeights moved = UnpackBlock(PackBlock(weights->blocks[0], config).clone(), config, layout);
    EXPECT_EQ(moved.layout, layout);
    EXPECT_TRUE(at::equal(moved.qkv_weight, weights->blocks[0].qkv_weight));

    at::manual_seed(3);
    const at::Tensor x0 = at::randn({13, config.d_model});
    EXPECT_TRUE(at::allclose(SplitBlock(weights->blocks[0], x0, config.n_heads),
                             SplitBlock(plain->blocks[0], x0, config.n_heads), 1e-5, 1e-5));
    ExpectWholeModelMatches(*weights, model);
  }
}

// Panels with every MLP of the families (GELU, GELU-tanh, SwiGLU: the
// fixed-order activation kernels), no biases or biases, and a tied head
// that the embedding reads from its panels: the same numbers as plain
// weights to fp32 rounding, and the embedding bit for bit.
TEST(LayerMathPanelsTest, EveryFamilyMlpAndATiedHeadMatchPlainWeights) {
  c10::NoGradGuard no_grad;
  for (const char* mlp : {"gelu", "gelu_tanh", "swiglu"}) {
    SCOPED_TRACE(mlp);
    ModelConfig config = SmallTestConfig(64, 2, 40, /*bias=*/std::string(mlp) != "swiglu");
    ASSERT_TRUE(ApplyOverride(config, std::string("model.mlp=") + mlp).ok());
    ASSERT_TRUE(ApplyOverride(config, "model.tie_embeddings=true").ok());
    ASSERT_TRUE(ApplyOverride(config, "model.d_ff=72").ok());  // not a multiple of the vector width
    Result<ModelWeights> panels = LoadModelWeights({"", config, 5}, {}, /*keep_all=*/true);
    Result<ModelWeights> plain = LoadModelWeights({"", config, 5}, {}, /*keep_all=*/true);
    ASSERT_TRUE(panels.ok() && plain.ok()) << panels.status().ToString();
    PackWeights(*panels, LinearLayout::kPanels);
    ASSERT_TRUE(panels->lm_head.is_same(panels->tok_emb)) << "the tie survives packing";
    const at::Tensor tokens = at::tensor(std::vector<int64_t>{3, 39, 0, 17, 17}, at::kLong);
    const at::Tensor positions = at::tensor(std::vector<int64_t>{0, 1, 2, 3, 9}, at::kLong);
    const at::Tensor x = Embed(*panels, tokens, positions);
    ASSERT_TRUE(at::equal(x, Embed(*plain, tokens, positions)));
    at::manual_seed(4);
    const at::Tensor attended = at::randn({5, config.d_model});
    const at::Tensor h = PostAttention(panels->blocks[0], x, attended);
    const at::Tensor h_plain = PostAttention(plain->blocks[0], x, attended);
    EXPECT_TRUE(at::allclose(h, h_plain, 1e-5, 1e-5)) << (h - h_plain).abs().max().item<float>();
    EXPECT_TRUE(at::allclose(PreAttention(panels->blocks[0], h), PreAttention(plain->blocks[0], h), 1e-5, 1e-5));
    EXPECT_TRUE(at::allclose(HeadLogits(*panels, h), HeadLogits(*plain, h), 1e-5, 1e-5));
  }
}

// bf16 and int8 weights (blocks, head, a tied or untied embedding) compute
// what the reference forward computes with its weights rounded as the
// format holds them (RoundToFormat), to fp32 rounding; a block moved as the
// pool moves it (flat bytes) computes the same bits; and the formats hold
// what they promise in bytes.
TEST(LayerMathFormatsTest, Bf16AndInt8ComputeTheirRoundedWeights) {
  c10::NoGradGuard no_grad;
  for (const char* mlp : {"gelu", "swiglu"}) {
    for (bool tied : {false, true}) {
      for (WeightFormat format : {WeightFormat::kBf16, WeightFormat::kInt8}) {
        SCOPED_TRACE(std::string(mlp) + (tied ? " tied " : " untied ") + WeightFormatName(format));
        ModelConfig config = SmallTestConfig(64, 2, 40, /*bias=*/std::string(mlp) == "gelu");
        ASSERT_TRUE(ApplyOverride(config, std::string("model.mlp=") + mlp).ok());
        ASSERT_TRUE(ApplyOverride(config, std::string("model.tie_embeddings=") + (tied ? "true" : "false")).ok());
        Result<ModelWeights> weights = LoadModelWeights({"", config, 8}, {}, /*keep_all=*/true);
        ASSERT_TRUE(weights.ok()) << weights.status().ToString();
        const int64_t fp32_bytes = weights->HeldBytes();
        PackWeights(*weights, LinearLayout::kPanels, format);
        EXPECT_EQ(weights->head_format, format);
        EXPECT_EQ(weights->lm_head.is_same(weights->tok_emb), tied);
        for (const BlockWeights& b : weights->blocks) {
          EXPECT_EQ(b.format, format);
          EXPECT_EQ(b.flat.numel(), BlockBytes(config, format));
        }
        EXPECT_LT(weights->HeldBytes(), fp32_bytes * (format == WeightFormat::kBf16 ? 0.6 : 0.4));

        GptSegment model(config, WholeModelSpan(config), /*seed=*/8);
        RoundToFormat(model, format);
        at::manual_seed(6);
        ExpectWholeModelMatches(*weights, model);

        // The pool's unit: flat bytes, unpacked on another rank.
        const BlockWeights& b = weights->blocks[1];
        const BlockWeights moved = UnpackBlock(PackBlock(b, config).clone(), config, LinearLayout::kPanels, format);
        const at::Tensor x = at::randn({7, config.d_model});
        EXPECT_TRUE(at::equal(PreAttention(moved, x), PreAttention(b, x)));
        EXPECT_TRUE(at::equal(PostAttention(moved, x, x), PostAttention(b, x, x)));
      }
    }
  }
}

// The rounding itself: bf16 to nearest even (LibTorch's conversion), int8
// within half a step of the row's scale, and an fp32 format untouched.
TEST(LayerMathFormatsTest, RoundedToFormatStaysWithinTheFormatsStep) {
  at::manual_seed(2);
  const at::Tensor w = at::randn({33, 70});
  EXPECT_TRUE(at::equal(RoundedToFormat(w, WeightFormat::kFp32), w));
  const at::Tensor bf16 = RoundedToFormat(w, WeightFormat::kBf16);
  EXPECT_TRUE(at::equal(bf16, w.to(at::kBFloat16).to(at::kFloat)));
  EXPECT_LE((bf16 - w).abs().div(w.abs()).max().item<float>(), 1.0f / 256);
  const at::Tensor int8 = RoundedToFormat(w, WeightFormat::kInt8);
  const at::Tensor step = w.abs().amax(1, true) / 127;
  EXPECT_LE((int8 - w).abs().div(step).max().item<float>(), 0.5001f);
  EXPECT_FALSE(at::equal(int8, w));
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
