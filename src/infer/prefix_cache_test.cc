// Prefix caching in the engine: prompts behind a common prefix, the n
// samples of one prompt and a second run over the same prompts map cached
// KV blocks instead of prefilling them, and generate exactly what a run
// without caching generates (and the full-recompute reference, greedy) —
// with everything admitted in one pass, in small chunked passes, and in a
// cache so tight that cached blocks are evicted and sequences preempted.
#include <gtest/gtest.h>

#include <map>

#include "infer/engine.h"
#include "infer/infer_test_util.h"
#include "infer/local_pool.h"

namespace pw {
namespace {

constexpr int kBlock = 4;

struct Outputs {
  std::map<std::pair<std::string, int>, std::vector<int64_t>> tokens;  // (id, sample) -> tokens
  EngineStats stats;

  const std::vector<int64_t>& Of(const std::string& id, int sample = 0) const { return tokens.at({id, sample}); }
};

class PrefixCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_ = {"", SmallTestConfig(64, 3, 96), 1234};
    Result<ModelWeights> w = LoadModelWeights(source_, {}, true);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    weights_ = std::move(w).value();
  }

  // `count` prompts: a `shared`-token prefix, then a tail of 1 to 7 tokens
  // of their own.
  static std::vector<GenerationRequest> SharedPrefixRequests(int count, int shared, int max_new) {
    std::vector<GenerationRequest> requests;
    for (int i = 0; i < count; ++i) {
      GenerationRequest r;
      r.id = "p" + std::to_string(i);
      r.index = i;
      for (int j = 0; j < shared; ++j) r.prompt.push_back((37 * j + 11) % 256);
      for (int j = 0; j <= i % 7; ++j) r.prompt.push_back((13 * i + 7 * j + 101) % 256);
      r.max_new_tokens = max_new;
      requests.push_back(r);
    }
    return requests;
  }

  Outputs Generate(const std::vector<GenerationRequest>& requests, int64_t blocks, EngineOptions options) {
    std::unique_ptr<WeightPool> pool = MakeLocalPool(weights_);
    PagedKvCache cache(weights_.config, blocks, kBlock);
    InferenceEngine engine(weights_, *pool, cache, options);
    Outputs out;
    Status s = engine.Run(requests, [&](const GenerationResult& r) {
      EXPECT_NE(r.finish_reason, FinishReason::kError) << r.error;
      out.tokens[{r.id, r.sample}] = r.tokens;
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(cache.free_blocks(), blocks) << "every block held by a sequence was released";
    out.stats = engine.stats();
    return out;
  }

  // Runs `requests` with caching on and off; expects the same tokens and
  // returns the two runs.
  std::pair<Outputs, Outputs> OnAndOff(const std::vector<GenerationRequest>& requests, int64_t blocks,
                                       EngineOptions options) {
    options.prefix_caching = true;
    Outputs on = Generate(requests, blocks, options);
    options.prefix_caching = false;
    Outputs off = Generate(requests, blocks, options);
    EXPECT_EQ(on.tokens, off.tokens);
    EXPECT_EQ(off.stats.prefix_hit_tokens, 0);
    return {on, off};
  }

  WeightSource source_;
  ModelWeights weights_;
};

TEST_F(PrefixCacheTest, PromptsBehindACommonPrefixPrefillOnlyTheirTailsAndMatchCachingOff) {
  const std::vector<GenerationRequest> requests = SharedPrefixRequests(12, 24, 6);
  for (const int64_t batch : {int64_t{256}, int64_t{16}}) {  // all in one pass; chunked small passes
    SCOPED_TRACE("max_batch_tokens " + std::to_string(batch));
    EngineOptions options;
    options.max_batch_tokens = batch;
    auto [on, off] = OnAndOff(requests, 200, options);
    for (int i : {0, 5, 11}) {
      EXPECT_EQ(on.Of(requests[i].id), ReferenceGreedy(source_, requests[i])) << i;
    }
    // The first prompt computes the 24-token prefix (6 blocks); the other
    // 11 map it.
    EXPECT_EQ(on.stats.prefix_hit_tokens, 11 * 24);
    EXPECT_EQ(on.stats.prefill_tokens + on.stats.prefix_hit_tokens, off.stats.prefill_tokens);
    EXPECT_EQ(on.stats.preemptions + off.stats.preemptions, 0);
  }
}

TEST_F(PrefixCacheTest, TheSamplesOfAPromptShareItsBlocksAndDrawWhatCachingOffDraws) {
  std::vector<GenerationRequest> requests;
  for (int sample = 0; sample < 4; ++sample) {
    GenerationRequest r = SharedPrefixRequests(1, 30, 8)[0];  // 31 tokens
    r.sample = sample;
    r.samples = 4;
    requests.push_back(r);
  }
  EngineOptions options;
  options.sampling = {0.9, 40, 0.95, 77};
  auto [on, off] = OnAndOff(requests, 100, options);
  // Each later sample maps the prompt's 7 full blocks (28 of its 31
  // tokens; the last block is partial) and prefills 3.
  EXPECT_EQ(on.stats.prefix_hit_tokens, 3 * 28);
  EXPECT_EQ(on.stats.prefill_tokens, 31 + 3 * 3);
  // Different samples, not one sample four times.
  EXPECT_NE(on.Of("p0", 0), on.Of("p0", 1));
}

TEST_F(PrefixCacheTest, ATightCacheEvictsAndPreemptsWithoutChangingOutputs) {
  const std::vector<GenerationRequest> requests = SharedPrefixRequests(10, 20, 12);
  EngineOptions options;
  options.max_batch_tokens = 32;
  // 14 blocks of 4: a sequence reaches 39 positions (10 blocks), so a few
  // run at once and cached prefixes are evicted and mapped again.
  auto [on, off] = OnAndOff(requests, 14, options);
  for (const GenerationRequest& r : requests) {
    EXPECT_EQ(on.Of(r.id), ReferenceGreedy(source_, r)) << r.id;
  }
  EXPECT_GT(on.stats.preemptions, 0);
  EXPECT_GT(on.stats.prefix_hit_tokens, 0);
}

TEST_F(PrefixCacheTest, CachedBlocksOutliveTheirRunAndAreDroppedAfterAFailedOne) {
  std::unique_ptr<WeightPool> pool = MakeLocalPool(weights_);
  PagedKvCache cache(weights_.config, 200, kBlock);
  InferenceEngine engine(weights_, *pool, cache, EngineOptions{});
  const std::vector<GenerationRequest> requests = SharedPrefixRequests(3, 16, 4);
  auto ignore = [](const GenerationResult&) {};
  ASSERT_TRUE(engine.Run(requests, ignore).ok());
  const int64_t first_prefill = engine.stats().prefill_tokens;
  ASSERT_TRUE(engine.Run(requests, ignore).ok());  // the same prompts again
  const int64_t second_prefill = engine.stats().prefill_tokens - first_prefill;
  // Each prompt (17 to 19 tokens) maps every full block before its last
  // token, which is always computed: only what follows them is prefilled.
  int64_t tails = 0;
  for (const GenerationRequest& r : requests) {
    tails += static_cast<int64_t>(r.prompt.size()) - (static_cast<int64_t>(r.prompt.size()) - 1) / kBlock * kBlock;
  }
  EXPECT_EQ(second_prefill, tails);
  EXPECT_GT(cache.prefix_stats().cached_blocks, 0);
  // A run that fails (its request source) drops the index: its pass may
  // have left blocks half written.
  Status failed = engine.Run(requests, ignore, []() -> Result<InferenceEngine::RequestBatch> {
    return Status::IoError("the store is gone");
  });
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(cache.prefix_stats().cached_blocks, 0);
  EXPECT_EQ(cache.free_blocks(), 200);
}

}  // namespace
}  // namespace pw
