// Batch invariance of the engine: a request's tokens and log-probabilities
// are the same bits whatever runs beside it — the requests in another
// order, passes of 5 rows or 256, one sequence at a time, a KV cache so
// small that sequences are preempted and recomputed, prefix caching on or
// off — for seeded sampling, with the weights in panels (the fixed-order
// kernels, model/panel_linear.h), at every kernel level this CPU runs, for
// the byte GPT, a Llama-family block (rotary, RMSNorm, SwiGLU, grouped-query
// heads) and a GPT-2-style one (GELU-tanh, tied head).
// tests/infer_invariance_test.sh checks ranks and pool modes end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "infer/engine.h"
#include "infer/infer_test_util.h"
#include "infer/layer_math.h"
#include "infer/local_pool.h"
#include "model/fused_kernels.h"
#include "model/model_config.h"

namespace pw {
namespace {

// What must not change: each request's tokens and every log-probability.
using Outcome = std::map<std::string, std::pair<std::vector<int64_t>, std::vector<double>>>;

struct Batching {
  std::string name;
  int64_t max_batch_tokens = 256;
  int max_sequences = 256;
  int64_t kv_blocks = 200;
  bool prefix_caching = true;
  bool reversed = false;
};

std::vector<GenerationRequest> Requests() {
  std::vector<GenerationRequest> requests;
  const int lengths[] = {1, 9, 23, 4, 17, 30, 12, 2};
  for (int i = 0; i < 8; ++i) {
    GenerationRequest r;
    r.id = "r" + std::to_string(i);
    r.index = i;
    for (int j = 0; j < lengths[i]; ++j) r.prompt.push_back((31 * j + 17 * i + 5) % 250);
    r.max_new_tokens = 10;
    requests.push_back(r);
  }
  // Requests 2 and 5 start alike: prefix caching maps 16 positions of one.
  for (int j = 0; j < 16; ++j) requests[2].prompt[j] = requests[5].prompt[j] = (29 * j) % 250;
  return requests;
}

Outcome Run(const ModelWeights& weights, const Batching& b, int64_t* preemptions) {
  std::vector<GenerationRequest> requests = Requests();
  if (b.reversed) std::reverse(requests.begin(), requests.end());
  EngineOptions options;
  options.sampling = {0.8, 40, 0.95, 11};
  options.logprobs = 0;
  options.max_batch_tokens = b.max_batch_tokens;
  options.max_sequences = b.max_sequences;
  options.prefix_caching = b.prefix_caching;
  std::unique_ptr<WeightPool> pool = MakeLocalPool(weights);
  PagedKvCache cache(weights.config, b.kv_blocks, 4);
  InferenceEngine engine(weights, *pool, cache, options);
  Outcome out;
  Status s = engine.Run(requests, [&](const GenerationResult& r) {
    std::vector<double> logprobs;
    for (const TokenLogprobs& t : r.logprobs) logprobs.push_back(t.logprob);
    out[r.id] = {r.tokens, logprobs};
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  *preemptions += engine.stats().preemptions;
  return out;
}

void ExpectInvariant(const ModelWeights& weights) {
  const std::vector<Batching> batchings = {
      {"one pass for all"},
      {"reversed", 256, 256, 200, true, true},
      {"5 rows a pass", 5},
      {"one sequence at a time", 256, 1},
      {"a tight cache (preemption)", 16, 256, 12},
      {"prefix caching off, reversed, 7 rows", 7, 256, 200, false, true},
  };
  int64_t preemptions = 0;
  const Outcome reference = Run(weights, batchings[0], &preemptions);
  ASSERT_EQ(reference.size(), 8u);
  for (size_t i = 1; i < batchings.size(); ++i) {
    const Outcome got = Run(weights, batchings[i], &preemptions);
    for (const auto& [id, expected] : reference) {
      EXPECT_EQ(got.at(id).first, expected.first) << batchings[i].name << ": " << id;
      EXPECT_EQ(got.at(id).second, expected.second) << batchings[i].name << ": " << id << " (log-probabilities)";
    }
  }
  EXPECT_GT(preemptions, 0) << "the tight cache must preempt, or it tests nothing";
}

ModelWeights LoadInPanels(const ModelConfig& config, WeightFormat format = WeightFormat::kFp32) {
  Result<ModelWeights> w = LoadModelWeights(WeightSource{"", config, 99}, {}, true);
  PW_CHECK(w.ok(), w.status().ToString());
  PackWeights(*w, LinearLayout::kPanels, format);
  return std::move(w).value();
}

ModelConfig WithSettings(ModelConfig c, std::initializer_list<const char*> settings) {
  for (const char* setting : settings) {
    PW_CHECK(ApplyOverride(c, std::string("model.") + setting).ok(), setting);
  }
  return c;
}

ModelConfig LlamaConfig() {
  return WithSettings(SmallTestConfig(64, 2, 64, /*bias=*/false),
                      {"position=rope", "norm=rmsnorm", "mlp=swiglu", "d_ff=96", "n_kv_heads=2"});
}

// GPT-2's arithmetic: GELU-tanh, a tied head; widths that are not multiples
// of a vector (an MLP of 100, a vocabulary of 250: partial panels).
ModelConfig Gpt2StyleConfig() {
  return WithSettings(SmallTestConfig(48, 2, 64), {"mlp=gelu_tanh", "tie_embeddings=true", "d_ff=100"});
}

// Every kernel level this CPU runs, each for the whole test.
class BatchInvarianceTest : public ::testing::TestWithParam<KernelIsa> {
 protected:
  void SetUp() override {
    if (!CpuSupportsIsa(GetParam())) GTEST_SKIP() << "this CPU cannot run the " << KernelIsaName(GetParam()) << " kernels";
    previous_ = SetKernelIsaForTesting(GetParam());
  }
  void TearDown() override {
    if (CpuSupportsIsa(GetParam())) SetKernelIsaForTesting(previous_);
  }

 private:
  KernelIsa previous_ = KernelIsa::kScalar;
};

TEST_P(BatchInvarianceTest, ByteGpt) { ExpectInvariant(LoadInPanels(SmallTestConfig(64, 3, 64))); }

TEST_P(BatchInvarianceTest, LlamaFamily) { ExpectInvariant(LoadInPanels(LlamaConfig())); }

TEST_P(BatchInvarianceTest, Gpt2Style) {
  ModelConfig config = Gpt2StyleConfig();
  config.vocab_size = 250;
  ExpectInvariant(LoadInPanels(config));
}

// Weights held in bf16 and int8 (the tied head and the embedding read from
// it in the format too) keep the guarantee: the same fixed order.
TEST_P(BatchInvarianceTest, LlamaFamilyInInt8) { ExpectInvariant(LoadInPanels(LlamaConfig(), WeightFormat::kInt8)); }

TEST_P(BatchInvarianceTest, Gpt2StyleInBf16) {
  ModelConfig config = Gpt2StyleConfig();
  config.vocab_size = 250;
  ExpectInvariant(LoadInPanels(config, WeightFormat::kBf16));
}

INSTANTIATE_TEST_SUITE_P(Levels, BatchInvarianceTest,
                         ::testing::Values(KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvx512),
                         [](const ::testing::TestParamInfo<KernelIsa>& info) { return KernelIsaName(info.param); });

}  // namespace
}  // namespace pw
