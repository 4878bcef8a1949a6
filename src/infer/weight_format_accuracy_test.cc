// What a weight format costs, through the real decode path (embedding,
// blocks over the paged KV cache, head; one token per pass as decode runs
// it): a fixed text is fed token by token to the same model held in fp32,
// bf16 and int8, and each format is held to its bounds against fp32 —
//   * greedy tokens: wherever fp32's top-2 logit margin exceeds the
//     format's error bound (0.05 bf16, 0.25 int8), the format's most likely
//     token is fp32's; checked on sharp models (init std 0.2: logits spread
//     far apart, and every weight large, which is also the hardest case for
//     the rounding);
//   * per-token loss: mean |loss - fp32's loss| <= 0.01 nats (bf16), 0.05
//     (int8), on models of the trainer's initial scale (init std 0.02). (A
//     trained checkpoint on its own text is held to the same bounds by
//     tests/eval_cli_test.sh, through `pipewright eval --weights`.)
// The families differ in what the formats touch: GPT-2 style (biases,
// LayerNorm, learned positions, untied head: the embedding in bf16) and
// Llama style (RMSNorm, SwiGLU, rope, grouped-query attention, tied head:
// the embedding read from the int8/bf16 head).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "infer/decoder.h"
#include "infer/infer_test_util.h"
#include "infer/kv_cache.h"
#include "infer/layer_math.h"
#include "infer/local_pool.h"
#include "infer/model_weights.h"

namespace pw {
namespace {

const char kFixtureText[] =
    "Pipeline parallelism splits a model into stages that run on different devices; "
    "microbatches flow through them, and the idle time between is the bubble.";

struct Trace {
  std::vector<double> loss;    // -log p(next token), per position
  std::vector<int64_t> top;    // the most likely next token
  std::vector<double> margin;  // its logit minus the runner-up's
  std::vector<at::Tensor> logits;
};

// Feeds `text` one token per pass and records each position's prediction.
Trace DecodeText(const ModelWeights& weights, const std::vector<int64_t>& text) {
  std::unique_ptr<WeightPool> pool = MakeLocalPool(weights);
  PagedKvCache cache(weights.config, (static_cast<int64_t>(text.size()) + 15) / 16, 16);
  EXPECT_TRUE(cache.Reserve(0, static_cast<int64_t>(text.size())));
  Trace t;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    Result<at::Tensor> logits = ForwardChunks(weights, *pool, cache, {{0, {text[i]}, static_cast<int64_t>(i)}});
    EXPECT_TRUE(logits.ok()) << logits.status().ToString();
    if (!logits.ok()) return t;
    const at::Tensor row = (*logits)[0].to(at::kDouble);
    t.loss.push_back(-at::log_softmax(row, 0)[text[i + 1]].item<double>());
    const auto [values, indices] = row.topk(2);
    t.top.push_back(indices[0].item<int64_t>());
    t.margin.push_back(values[0].item<double>() - values[1].item<double>());
    t.logits.push_back(row);
  }
  return t;
}

ModelConfig Family(const std::string& name, double init_std) {
  ModelConfig c = SmallTestConfig(64, 3, 160, /*bias=*/name == "gpt2");
  c.init_std = init_std;
  if (name == "llama") {
    for (const char* o : {"model.norm=rmsnorm", "model.mlp=swiglu", "model.position=rope", "model.n_kv_heads=2",
                          "model.tie_embeddings=true"}) {
      PW_CHECK(ApplyOverride(c, o).ok(), o);
    }
  }
  return c;
}

struct FormatBounds {
  WeightFormat format;
  double mean_abs_loss;  // nats per token
  double margin;         // logits: a greedy choice with a larger margin must not change
};

struct Comparison {
  double mean_abs_loss_delta = 0, max_logit_delta = 0;
  int differ = 0, compared = 0, positions = 0;
};

// The model of `config` in fp32 and in `b.format` over the fixture text;
// fails the test where a greedy token with fp32 margin above b.margin differs.
Comparison Compare(const ModelConfig& config, const FormatBounds& b) {
  const std::vector<int64_t> text(reinterpret_cast<const unsigned char*>(kFixtureText),
                                  reinterpret_cast<const unsigned char*>(kFixtureText) + sizeof kFixtureText - 1);
  Comparison c;
  Result<ModelWeights> fp32 = LoadModelWeights({"", config, 21}, {}, /*keep_all=*/true);
  Result<ModelWeights> held = LoadModelWeights({"", config, 21}, {}, /*keep_all=*/true);
  EXPECT_TRUE(fp32.ok() && held.ok()) << fp32.status().ToString();
  if (!fp32.ok() || !held.ok()) return c;
  PackWeights(*fp32, LinearLayout::kPanels);
  PackWeights(*held, LinearLayout::kPanels, b.format);
  const Trace reference = DecodeText(*fp32, text), got = DecodeText(*held, text);
  EXPECT_EQ(got.loss.size(), text.size() - 1);
  EXPECT_EQ(reference.loss.size(), text.size() - 1);
  if (got.loss.size() != reference.loss.size()) return c;
  c.positions = static_cast<int>(got.loss.size());
  for (size_t i = 0; i < got.loss.size(); ++i) {
    c.mean_abs_loss_delta += std::abs(got.loss[i] - reference.loss[i]) / c.positions;
    c.max_logit_delta = std::max(c.max_logit_delta, (got.logits[i] - reference.logits[i]).abs().max().item<double>());
    c.differ += got.top[i] != reference.top[i];
    if (reference.margin[i] <= b.margin) continue;
    ++c.compared;
    EXPECT_EQ(got.top[i], reference.top[i]) << "position " << i << ": fp32's margin " << reference.margin[i];
  }
  std::printf("%s init std %.2f: mean |loss delta| %.5f nats, max |logit delta| %.4f, greedy differs at %d of %d "
              "positions; %d compared above the %.2f margin\n",
              WeightFormatName(b.format), config.init_std, c.mean_abs_loss_delta, c.max_logit_delta, c.differ,
              c.positions, c.compared, b.margin);
  return c;
}

const FormatBounds kBounds[] = {{WeightFormat::kBf16, 0.01, 0.05}, {WeightFormat::kInt8, 0.05, 0.25}};

class WeightFormatAccuracyTest : public ::testing::TestWithParam<const char*> {};

TEST_P(WeightFormatAccuracyTest, GreedyTokensAboveTheFormatsMarginAreFp32s) {
  c10::NoGradGuard no_grad;
  for (const FormatBounds& b : kBounds) {
    SCOPED_TRACE(WeightFormatName(b.format));
    const Comparison c = Compare(Family(GetParam(), 0.2), b);
    // The format changed the logits (else nothing was tested), and most
    // positions had a margin to hold.
    EXPECT_GT(c.max_logit_delta, 0);
    EXPECT_GT(c.compared, c.positions / 2);
  }
}

TEST_P(WeightFormatAccuracyTest, PerTokenLossStaysWithinTheFormatsBound) {
  c10::NoGradGuard no_grad;
  for (const FormatBounds& b : kBounds) {
    SCOPED_TRACE(WeightFormatName(b.format));
    const Comparison c = Compare(Family(GetParam(), 0.02), b);
    EXPECT_GT(c.mean_abs_loss_delta, 0);
    EXPECT_LE(c.mean_abs_loss_delta, b.mean_abs_loss);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, WeightFormatAccuracyTest, ::testing::Values("gpt2", "llama"));

}  // namespace
}  // namespace pw
