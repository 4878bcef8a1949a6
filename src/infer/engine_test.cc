// InferenceEngine with the replicate pool against ReferenceGreedy (full
// recompute with GptSegment): continuous batching under a KV cache too
// small for all requests at once, chunked prefill, blocks on demand and
// preemption (outputs unchanged), the three stop reasons,
// requests that fail alone; seeded sampling reproducible across batch
// compositions; the sampling primitives themselves.
#include "infer/engine.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "infer/decoder.h"
#include "infer/layer_math.h"
#include "infer/local_pool.h"
#include "infer/sampling.h"
#include "infer/infer_test_util.h"
#include "infer/infer_worker.h"
#include "model/gpt.h"

namespace pw {
namespace {

ModelConfig SmallConfig() { return SmallTestConfig(64, 3, 64); }

GenerationRequest Request(int index, int prompt_len, int max_new, int end_token = -1) {
  GenerationRequest r;
  r.id = "q" + std::to_string(index);
  r.index = index;
  for (int j = 0; j < prompt_len; ++j) r.prompt.push_back((31 * j + 17 * index + 5) % 256);
  r.max_new_tokens = max_new;
  if (end_token >= 0) r.stop_tokens = {end_token};
  return r;
}

struct GenRun {
  std::map<std::string, GenerationResult> results;
  std::vector<std::string> order;
  EngineStats stats;
};

GenRun Generate(const ModelWeights& weights, const std::vector<GenerationRequest>& requests,
             int64_t num_blocks, int block_size, EngineOptions options,
             KvDtype kv_dtype = KvDtype::kFp32) {
  std::unique_ptr<WeightPool> pool = MakeLocalPool(weights);
  PagedKvCache cache(weights.config, num_blocks, block_size, /*held_back=*/0, kv_dtype);
  InferenceEngine engine(weights, *pool, cache, options);
  GenRun run;
  Status s = engine.Run(requests, [&](const GenerationResult& r) {
    EXPECT_EQ(run.results.count(r.id), 0u) << "reported twice: " << r.id;
    run.results[r.id] = r;
    run.order.push_back(r.id);
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(cache.free_blocks(), num_blocks);  // everything released
  run.stats = engine.stats();
  return run;
}

// Every request generated the same tokens in both runs.
void ExpectSameTokens(const GenRun& a, const GenRun& b,
                      const std::vector<GenerationRequest>& requests) {
  for (const GenerationRequest& r : requests) {
    EXPECT_EQ(a.results.at(r.id).tokens, b.results.at(r.id).tokens) << r.id;
  }
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_ = {"", SmallConfig(), 1234};
    Result<ModelWeights> w = LoadModelWeights(source_, {}, true);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    weights_ = std::move(w).value();
  }
  WeightSource source_;
  ModelWeights weights_;
};

TEST_F(EngineTest, GreedyMatchesReferenceUnderContinuousBatching) {
  std::vector<GenerationRequest> requests;
  const int lengths[] = {1, 3, 7, 12, 20, 30, 5, 9};
  const int max_new[] = {16, 4, 6, 3, 8, 5, 2, 7};
  for (int i = 0; i < 8; ++i) requests.push_back(Request(i, lengths[i], max_new[i]));
  // 12 blocks of 4 positions: the largest request (30 + 5 - 1 = 34
  // positions) needs 9, so every request fits alone but not all together.
  EngineOptions options;
  options.max_batch_tokens = 16;  // prompts of 20 and 30 are prefilled in chunks
  GenRun run = Generate(weights_, requests, /*num_blocks=*/12, /*block_size=*/4, options);
  ASSERT_EQ(run.results.size(), requests.size());
  for (const GenerationRequest& r : requests) {
    const GenerationResult& got = run.results[r.id];
    EXPECT_EQ(got.tokens, ReferenceGreedy(source_, r)) << r.id;
    EXPECT_EQ(got.finish_reason, FinishReason::kLength) << r.id;
    EXPECT_EQ(got.prompt_tokens, static_cast<int>(r.prompt.size()));
    EXPECT_EQ(static_cast<int>(got.tokens.size()), r.max_new_tokens);
  }
  // Requests had to wait for blocks, and several ran together.
  EXPECT_LT(run.stats.peak_sequences, static_cast<int>(requests.size()));
  EXPECT_GE(run.stats.peak_sequences, 2);
  EXPECT_EQ(run.stats.generated_tokens, 16 + 4 + 6 + 3 + 8 + 5 + 2 + 7);
  int64_t prompt_tokens = 0;
  for (int l : lengths) prompt_tokens += l;
  EXPECT_EQ(run.stats.prompt_tokens, prompt_tokens);
  // Finish order is not request order (short requests overtake long ones).
  std::vector<std::string> request_order;
  for (const GenerationRequest& r : requests) request_order.push_back(r.id);
  EXPECT_NE(run.order, request_order);
}

// Every model family (model/gpt_math.h BlockSpec) decodes through the paged
// cache — rotary positions applied per row before k is cached, grouped-query
// heads read straight from a narrower cache, RMSNorm, SwiGLU, a tied head —
// to the tokens of full-sequence greedy decoding with the training forward,
// in fp32; fp16 and int8 caches agree with fp32 until a near-tie that their
// rounding flips (at least half the tokens; 18 to 24 of 24 measured).
TEST(EngineFamilyTest, EveryFamilyDecodesLikeTheTrainingForward) {
  const std::vector<std::vector<std::string>> families = {
      {"mlp=gelu_tanh", "tie_embeddings=true"},
      {"position=rope", "norm=rmsnorm", "mlp=swiglu", "d_ff=96", "n_kv_heads=2", "bias=false", "rope_theta=500000"},
      {"position=rope", "norm=rmsnorm", "mlp=swiglu", "n_kv_heads=1", "bias=false", "rope_scaling=llama3",
       "rope_original_context=16", "tie_embeddings=true"},
      {"position=rope", "norm=rmsnorm", "mlp=swiglu", "bias=false", "qkv_bias=true"},
  };
  for (const std::vector<std::string>& settings : families) {
    ModelConfig config = SmallConfig();
    for (const std::string& setting : settings) ASSERT_TRUE(ApplyOverride(config, "model." + setting).ok()) << setting;
    ASSERT_TRUE(ValidateModelConfig(config).ok()) << ValidateModelConfig(config).ToString();
    const WeightSource source{"", config, 1234};
    SCOPED_TRACE(settings.front() + " " + settings.back());
    Result<ModelWeights> weights = LoadModelWeights(source, {}, true);
    ASSERT_TRUE(weights.ok()) << weights.status().ToString();
    std::vector<GenerationRequest> requests;
    const int lengths[] = {1, 6, 13, 20};
    for (int i = 0; i < 4; ++i) requests.push_back(Request(i, lengths[i], 6));
    EngineOptions options;
    options.max_batch_tokens = 16;  // the 20-token prompt is prefilled in two chunks
    GenRun run = Generate(*weights, requests, /*num_blocks=*/40, /*block_size=*/4, options);
    for (const GenerationRequest& r : requests) EXPECT_EQ(run.results.at(r.id).tokens, ReferenceGreedy(source, r)) << r.id;
    for (KvDtype dtype : {KvDtype::kFp16, KvDtype::kInt8}) {
      GenRun rounded = Generate(*weights, requests, 40, 4, options, dtype);
      int same = 0, total = 0;
      for (const GenerationRequest& r : requests) {
        const std::vector<int64_t>& want = run.results.at(r.id).tokens;
        const std::vector<int64_t>& got = rounded.results.at(r.id).tokens;
        ASSERT_EQ(got.size(), want.size()) << r.id;
        // Up to the first difference (a near-tie the rounding flipped, after
        // which the sequences rightly part): the same tokens.
        for (size_t i = 0; i < got.size() && got[i] == want[i]; ++i) ++same;
        total += static_cast<int>(want.size());
      }
      std::printf("[figures] %s cache: %d of %d tokens before any divergence from fp32\n", KvDtypeName(dtype), same,
                  total);
      // A cache read with the wrong heads or scales decodes noise from the
      // first token on; rounding parts from fp32 only at a near-tie.
      EXPECT_GE(same, total / 2) << KvDtypeName(dtype);
    }
  }
}

TEST_F(EngineTest, SameOutputsWithAmpleResources) {
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 6; ++i) requests.push_back(Request(i, 2 + 5 * i, 9));
  EngineOptions tight, ample;
  tight.max_batch_tokens = 7;
  tight.max_sequences = 2;
  GenRun a = Generate(weights_, requests, 11, 4, tight);
  GenRun b = Generate(weights_, requests, 64, 16, ample);
  EXPECT_LE(a.stats.peak_sequences, 2);
  EXPECT_EQ(b.stats.peak_sequences, 6);
  for (const GenerationRequest& r : requests) {
    EXPECT_EQ(a.results[r.id].tokens, b.results[r.id].tokens) << r.id;
  }
}

// Start/Step (a side task's form of Run) generates what Run does, one pass
// per Step, keeps its state between Steps, and refuses misuse.
TEST_F(EngineTest, StepByStepGeneratesWhatRunDoes) {
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 6; ++i) requests.push_back(Request(i, 3 + 4 * i, 5));
  EngineOptions options;
  options.max_batch_tokens = 8;
  const GenRun whole = Generate(weights_, requests, 12, 4, options);

  std::unique_ptr<WeightPool> pool = MakeLocalPool(weights_);
  PagedKvCache cache(weights_.config, 12, 4);
  InferenceEngine engine(weights_, *pool, cache, options);
  Result<bool> early = engine.Step();
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.status().code(), StatusCode::kFailedPrecondition);
  std::map<std::string, GenerationResult> stepped;
  ASSERT_TRUE(engine.Start(requests, [&](const GenerationResult& r) { stepped[r.id] = r; }).ok());
  EXPECT_EQ(engine.Start(requests, [](const GenerationResult&) {}).code(), StatusCode::kFailedPrecondition);
  int steps = 0;
  for (bool done = false; !done; ++steps) {
    Result<bool> step = engine.Step();
    ASSERT_TRUE(step.ok()) << step.status().ToString();
    done = *step;
    EXPECT_EQ(engine.stats().steps, steps + 1);  // one forward pass per Step
    ASSERT_LT(steps, 1000);
  }
  EXPECT_EQ(steps, whole.stats.steps);
  EXPECT_EQ(cache.free_blocks(), 12);  // the finished run gave its blocks back
  ASSERT_EQ(stepped.size(), requests.size());
  for (const GenerationRequest& r : requests) EXPECT_EQ(stepped[r.id].tokens, whole.results.at(r.id).tokens) << r.id;
  // Over: a new run may start.
  EXPECT_TRUE(engine.Start({Request(9, 4, 2)}, [](const GenerationResult&) {}).ok());
}

TEST_F(EngineTest, PreemptionKeepsOutputsIdentical) {
  // 8 requests of 30 - 40 positions each in 10 blocks of 4: blocks are taken
  // as sequences grow, so several run at once until the cache runs out and
  // the youngest are preempted and recomputed later.
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 8; ++i) requests.push_back(Request(i, 4 + 3 * i, 18 - i));
  EngineOptions options;
  GenRun tight = Generate(weights_, requests, /*num_blocks=*/10, /*block_size=*/4, options);
  GenRun ample = Generate(weights_, requests, /*num_blocks=*/128, /*block_size=*/4, options);
  EXPECT_GT(tight.stats.preemptions, 0);
  EXPECT_GT(tight.stats.recomputed_tokens, 0);
  EXPECT_EQ(ample.stats.preemptions, 0);
  EXPECT_GE(tight.stats.peak_sequences, 2);
  EXPECT_EQ(tight.stats.generated_tokens, ample.stats.generated_tokens);
  ExpectSameTokens(tight, ample, requests);
  for (const GenerationRequest& r : requests) {
    EXPECT_EQ(tight.results[r.id].tokens, ReferenceGreedy(source_, r)) << r.id;
    EXPECT_EQ(tight.results[r.id].finish_reason, FinishReason::kLength) << r.id;
  }
  // Preempted in the middle of a chunked prefill too (passes of 6 rows).
  options.max_batch_tokens = 6;
  GenRun chunked = Generate(weights_, requests, 10, 4, options);
  EXPECT_GT(chunked.stats.preemptions, 0);
  ExpectSameTokens(chunked, ample, requests);
  // Sampled sequences keep their generators across a preemption.
  options.sampling = {0.9, 40, 0.95, 77};
  GenRun sampled_tight = Generate(weights_, requests, 10, 4, options);
  GenRun sampled_ample = Generate(weights_, requests, 128, 4, options);
  EXPECT_GT(sampled_tight.stats.preemptions, 0);
  ExpectSameTokens(sampled_tight, sampled_ample, requests);
}

// --logprobs: each generated token's score equals log_softmax of the
// full-recompute reference's logits at that position (at::log_softmax, not
// the engine's arithmetic), under batching, chunked prefill and preemption,
// greedy and sampled (the scores are the model's, not the tempered ones).
TEST_F(EngineTest, LogprobsMatchTheReferenceDistribution) {
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 6; ++i) requests.push_back(Request(i, 2 + 5 * i, 6));
  c10::NoGradGuard no_grad;
  GptSegment reference(weights_.config, WholeModelSpan(weights_.config), source_.seed);
  const int k = 5;
  for (bool sampled : {false, true}) {
    EngineOptions options;
    options.logprobs = k;
    options.max_batch_tokens = 6;  // chunked prefill; with 10 blocks, preemption too
    if (sampled) options.sampling = {0.9, 40, 0.95, 77};
    GenRun run = Generate(weights_, requests, 10, 4, options);
    EXPECT_GT(run.stats.preemptions, 0);
    for (const GenerationRequest& r : requests) {
      const GenerationResult& got = run.results.at(r.id);
      ASSERT_EQ(got.logprobs.size(), got.tokens.size()) << r.id;
      std::vector<int64_t> sequence = r.prompt;
      sequence.insert(sequence.end(), got.tokens.begin(), got.tokens.end() - 1);
      at::Tensor logits = reference.ForwardLogits(at::tensor(sequence, at::kLong).view({1, -1}), ForwardContext{});
      at::Tensor expected = at::log_softmax(logits[0].to(at::kDouble), -1);
      for (size_t t = 0; t < got.tokens.size(); ++t) {
        const TokenLogprobs& scored = got.logprobs[t];
        const at::Tensor row = expected[static_cast<int64_t>(r.prompt.size() + t - 1)];
        EXPECT_EQ(scored.token, got.tokens[t]);
        EXPECT_NEAR(scored.logprob, row[got.tokens[t]].item<double>(), 1e-4) << r.id << " token " << t;
        ASSERT_EQ(scored.top.size(), static_cast<size_t>(k));
        auto [values, ids] = row.topk(k);
        for (int i = 0; i < k; ++i) {
          EXPECT_EQ(scored.top[i].token, ids[i].item<int64_t>()) << r.id << " token " << t << " rank " << i;
          EXPECT_NEAR(scored.top[i].logprob, values[i].item<double>(), 1e-4);
        }
        if (!sampled) {
          EXPECT_EQ(scored.top[0].token, got.tokens[t]) << "greedy takes the most likely";
        }
      }
    }
  }
  // Off by default; 0 scores the token alone.
  EXPECT_TRUE(Generate(weights_, requests, 40, 4, EngineOptions{}).results.at("q1").logprobs.empty());
  EngineOptions own;
  own.logprobs = 0;
  GenRun alone = Generate(weights_, requests, 40, 4, own);
  EXPECT_EQ(alone.results.at("q1").logprobs.size(), 6u);
  EXPECT_TRUE(alone.results.at("q1").logprobs[0].top.empty());
}

TEST(SamplingTest, ScoreTokenIsLogSoftmaxWithTiesByLowerId) {
  at::Tensor logits = at::tensor({1.0f, 3.0f, 3.0f, -2.0f});
  const TokenLogprobs s = ScoreToken(logits, 3, 10);  // K capped at V
  const double log_z = std::log(std::exp(1.0) + 2 * std::exp(3.0) + std::exp(-2.0));
  EXPECT_NEAR(s.logprob, -2.0 - log_z, 1e-12);
  ASSERT_EQ(s.top.size(), 4u);
  EXPECT_EQ(s.top[0].token, 1);
  EXPECT_EQ(s.top[1].token, 2);
  EXPECT_EQ(s.top[2].token, 0);
  EXPECT_NEAR(s.top[0].logprob, 3.0 - log_z, 1e-12);
  double mass = 0;
  for (const TokenAlternative& a : s.top) mass += std::exp(a.logprob);
  EXPECT_NEAR(mass, 1.0, 1e-12);
}

TEST_F(EngineTest, RequestsFromASourceAreAskedForWhenThereIsRoomAndMatch) {
  // The shared queue's shape: nothing up front, chunks of 2 handed out on
  // demand, one of them holding a request that fails alone.
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 9; ++i) requests.push_back(Request(i, 3 + 4 * i, 6));
  requests[4].prompt.clear();  // empty: fails alone
  EngineOptions options;
  options.max_sequences = 3;
  GenRun all = Generate(weights_, requests, 40, 4, options);

  std::unique_ptr<WeightPool> pool = MakeLocalPool(weights_);
  PagedKvCache cache(weights_.config, 40, 4);
  InferenceEngine engine(weights_, *pool, cache, options);
  size_t handed = 0;
  int asked = 0, asked_after_end = 0;
  std::map<std::string, GenerationResult> got;
  int most_unfinished = 0;
  Status s = engine.Run(
      {}, [&](const GenerationResult& r) { got[r.id] = r; },
      [&]() -> Result<InferenceEngine::RequestBatch> {
        ++asked;
        if (handed >= requests.size()) {
          ++asked_after_end;
          return InferenceEngine::RequestBatch{{}, /*last=*/true};
        }
        // "Not now" every other time: asked again later.
        if (asked % 2 == 0) return InferenceEngine::RequestBatch{};
        most_unfinished = std::max(most_unfinished, static_cast<int>(handed - got.size()));
        InferenceEngine::RequestBatch batch;
        batch.requests.assign(requests.begin() + handed, requests.begin() + std::min(handed + 2, requests.size()));
        handed += batch.requests.size();
        return batch;
      });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(asked_after_end, 1) << "asked once more after the end, then never again";
  EXPECT_GE(asked, 10);
  ASSERT_EQ(got.size(), requests.size());
  for (const GenerationRequest& r : requests) {
    EXPECT_EQ(got[r.id].tokens, all.results.at(r.id).tokens) << r.id;
    EXPECT_EQ(got[r.id].finish_reason, all.results.at(r.id).finish_reason) << r.id;
  }
  EXPECT_EQ(got["q4"].finish_reason, FinishReason::kError);
  // It asked only when it had room: never more unfinished requests claimed
  // than it runs at once plus one chunk waiting.
  EXPECT_LE(most_unfinished, options.max_sequences + 2);
  EXPECT_EQ(cache.free_blocks(), 40);
}

TEST_F(EngineTest, ASourceThatFailsEndsTheRunWithItsError) {
  std::unique_ptr<WeightPool> pool = MakeLocalPool(weights_);
  PagedKvCache cache(weights_.config, 40, 4);
  InferenceEngine engine(weights_, *pool, cache, EngineOptions{});
  int results = 0;
  Status s = engine.Run(
      {Request(0, 5, 4)}, [&](const GenerationResult&) { ++results; },
      []() -> Result<InferenceEngine::RequestBatch> { return Status::IoError("the store is gone"); });
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("the store is gone"), std::string::npos) << s.ToString();
  EXPECT_EQ(cache.free_blocks(), 40) << "running sequences released";

  // A source that never hands anything out nor says it is done: an error,
  // not a hang.
  Status idle = engine.Run({}, [](const GenerationResult&) {},
                           []() -> Result<InferenceEngine::RequestBatch> { return InferenceEngine::RequestBatch{}; });
  EXPECT_EQ(idle.code(), StatusCode::kInternal) << idle.ToString();
}

TEST_F(EngineTest, BlocksOnDemandRunMoreSequences) {
  // Each request would reserve 6 + 40 - 1 = 45 positions (12 blocks of 4)
  // whole; 24 blocks held two of them at once. Taken as they grow, the
  // prompts' 2 blocks each let many start together.
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 8; ++i) requests.push_back(Request(i, 6, 40));
  GenRun run = Generate(weights_, requests, 24, 4, EngineOptions{});
  EXPECT_GT(run.stats.peak_sequences, 2);
  for (const GenerationRequest& r : requests) {
    EXPECT_EQ(run.results[r.id].tokens, ReferenceGreedy(source_, r)) << r.id;
  }
}

// K or V [n, d] as a cache of `dtype` stores them and reads them back:
// fp16 rounding, or int8 with one scale per row and head (the largest
// magnitude / 127, values rounded to nearest) — written with tensor ops,
// not the cache's loops.
at::Tensor RoundAsCache(const at::Tensor& x, KvDtype dtype, int64_t heads) {
  if (dtype == KvDtype::kFp16) return x.to(at::kHalf).to(at::kFloat);
  if (dtype != KvDtype::kInt8) return x;
  at::Tensor h = x.reshape({x.size(0), heads, x.size(1) / heads});
  at::Tensor scale = h.abs().amax(2, true) / 127.0f;
  at::Tensor steps = at::where(scale > 0, at::round(h / scale).clamp(-127, 127), at::zeros_like(h));
  return (steps * scale).reshape(x.sizes());
}

// A reference for an fp16 or int8 KV cache: greedy decoding by full
// recompute, block by block with the model's own parts (layer_math.h),
// attention by model/gpt_math.h CausalAttention over K and V rounded as
// the cache stores them (RoundAsCache) — no cache, no paging, no paged
// kernel. With fp32 it is the plain model (checked against
// ReferenceGreedy). Returns the tokens and each one's log-probability.
std::pair<std::vector<int64_t>, std::vector<double>> ReferenceGreedyKvRounded(
    const ModelWeights& weights, const GenerationRequest& request, KvDtype round) {
  c10::NoGradGuard no_grad;
  const ModelConfig& c = weights.config;
  std::vector<int64_t> sequence = request.prompt, out;
  std::vector<double> logprobs;
  while (static_cast<int64_t>(out.size()) < request.max_new_tokens &&
         static_cast<int64_t>(sequence.size()) <= c.seq_len) {
    const int64_t n = static_cast<int64_t>(sequence.size());
    at::Tensor x = Embed(weights, at::tensor(sequence, at::kLong), at::arange(n, at::kLong));
    for (int layer = 0; layer < c.n_layers; ++layer) {
      const BlockWeights& block = weights.blocks[layer];
      at::Tensor qkv = PreAttention(block, x);
      at::Tensor q = qkv.narrow(1, 0, c.d_model).contiguous();
      at::Tensor k = qkv.narrow(1, c.d_model, c.d_model).contiguous();
      at::Tensor v = qkv.narrow(1, 2 * c.d_model, c.d_model).contiguous();
      k = RoundAsCache(k, round, c.n_heads);
      v = RoundAsCache(v, round, c.n_heads);
      x = PostAttention(block, x, CausalAttention(q, k, v, 0, c.n_heads, 0.0, ForwardContext{}));
    }
    at::Tensor logits = HeadLogits(weights, x.narrow(0, n - 1, 1))[0];
    const int64_t token = GreedyToken(logits);
    logprobs.push_back(at::log_softmax(logits.to(at::kDouble), -1)[token].item<double>());
    out.push_back(token);
    sequence.push_back(token);
  }
  return {out, logprobs};
}

// The largest log-probability differences of an engine run with `dtype`'s
// cache from the reference rounding the same way, and from the unrounded
// model; the tokens must be the rounding reference's.
std::pair<double, double> CheckAgainstRoundingReference(const ModelWeights& weights, KvDtype dtype) {
  std::vector<GenerationRequest> requests;
  const int lengths[] = {1, 3, 7, 12, 20, 30, 5, 9};
  for (int i = 0; i < 8; ++i) requests.push_back(Request(i, lengths[i], 12));
  EngineOptions options;
  options.max_batch_tokens = 16;  // chunked prefill, decode rows beside it
  options.logprobs = 0;
  GenRun run = Generate(weights, requests, 24, 4, options, dtype);
  double off_rounded = 0, off_exact = 0;
  for (const GenerationRequest& r : requests) {
    const GenerationResult& got = run.results.at(r.id);
    auto [tokens, logprobs] = ReferenceGreedyKvRounded(weights, r, dtype);
    EXPECT_EQ(got.tokens, tokens) << KvDtypeName(dtype) << " request " << r.id;
    if (got.tokens != tokens) continue;
    const auto [exact_tokens, exact] = ReferenceGreedyKvRounded(weights, r, KvDtype::kFp32);
    for (size_t t = 0; t < tokens.size(); ++t) {
      off_rounded = std::max(off_rounded, std::abs(got.logprobs[t].logprob - logprobs[t]));
    }
    // Against the unrounded model only while it chose the same tokens.
    for (size_t t = 0; t < tokens.size() && t < exact_tokens.size(); ++t) {
      if (exact_tokens[t] != tokens[t]) break;
      off_exact = std::max(off_exact, std::abs(got.logprobs[t].logprob - exact[t]));
    }
  }
  std::printf("%s KV: log-probabilities within %.2g of the rounding reference, %.2g of fp32's\n",
              KvDtypeName(dtype), off_rounded, off_exact);
  return {off_rounded, off_exact};
}

TEST_F(EngineTest, Fp16KvCacheMatchesAReferenceRoundingKeysAndValues) {
  // The hand-built reference is the model: unrounded, it is ReferenceGreedy.
  const GenerationRequest r = Request(4, 20, 12);
  EXPECT_EQ(ReferenceGreedyKvRounded(weights_, r, KvDtype::kFp32).first, ReferenceGreedy(source_, r));
  auto [off_rounded, off_exact] = CheckAgainstRoundingReference(weights_, KvDtype::kFp16);
  // The engine computes what the rounding reference does, to fp32 rounding
  // (the tolerance of LogprobsMatchTheReferenceDistribution; measured
  // 4e-5), and measurably not what the unrounded model does (measured
  // 2e-3): the cache did round, on every path.
  EXPECT_LT(off_rounded, 1e-4);
  EXPECT_GT(off_exact, 10 * off_rounded);
}

TEST_F(EngineTest, Int8KvCacheMatchesAReferenceQuantisingKeysAndValues) {
  auto [off_rounded, off_exact] = CheckAgainstRoundingReference(weights_, KvDtype::kInt8);
  // Looser than fp16's 1e-4: the engine's K and V differ from the full
  // recompute's in the last fp32 bits (other GEMM shapes), and a value that
  // close to the midpoint of two int8 steps rounds to the other step, a
  // whole step apart (measured 3.5e-4). Still far from the unrounded model
  // (measured 4.4e-2): the cache did quantise.
  EXPECT_LT(off_rounded, 2e-3);
  EXPECT_GT(off_exact, 10 * off_rounded);
}

TEST_F(EngineTest, StopsAtEndToken) {
  GenerationRequest plain = Request(3, 6, 12);
  std::vector<int64_t> full = ReferenceGreedy(source_, plain);
  ASSERT_EQ(full.size(), 12u);
  const int64_t end = full[4];
  size_t first = 0;
  while (full[first] != end) ++first;
  GenerationRequest r = Request(3, 6, 12, static_cast<int>(end));
  GenRun run = Generate(weights_, {r}, 8, 4, EngineOptions{});
  const GenerationResult& got = run.results[r.id];
  EXPECT_EQ(got.finish_reason, FinishReason::kEnd);
  EXPECT_EQ(got.tokens, std::vector<int64_t>(full.begin(), full.begin() + first + 1));
  EXPECT_EQ(got.tokens, ReferenceGreedy(source_, r));
}

TEST_F(EngineTest, StopsAtContextLength) {
  // 60 prompt tokens, seq_len 64: tokens 61..65 of the sequence are
  // generated (the 65th needs no position), then there is no room.
  GenerationRequest r = Request(1, 60, 20);
  GenRun run = Generate(weights_, {r}, 16, 4, EngineOptions{});
  const GenerationResult& got = run.results[r.id];
  EXPECT_EQ(got.finish_reason, FinishReason::kContext);
  EXPECT_EQ(got.tokens.size(), 5u);
  EXPECT_EQ(got.tokens, ReferenceGreedy(source_, r));
  // A prompt of exactly seq_len still yields one token.
  GenerationRequest full = Request(2, 64, 3);
  GenRun run2 = Generate(weights_, {full}, 16, 4, EngineOptions{});
  EXPECT_EQ(run2.results[full.id].tokens.size(), 1u);
  EXPECT_EQ(run2.results[full.id].finish_reason, FinishReason::kContext);
  EXPECT_EQ(run2.results[full.id].tokens, ReferenceGreedy(source_, full));
}

TEST_F(EngineTest, BadRequestsFailAlone) {
  std::vector<GenerationRequest> requests = {Request(0, 5, 4), Request(1, 70, 4),
                                             Request(2, 0, 4), Request(3, 8, 4),
                                             Request(4, 10, 60), Request(5, 4, 0)};
  requests[3].prompt[2] = 300;  // outside the vocabulary
  // 10 blocks of 4 = 40 positions: request 4 needs 64 and can never run.
  GenRun run = Generate(weights_, requests, 10, 4, EngineOptions{});
  ASSERT_EQ(run.results.size(), requests.size());
  EXPECT_EQ(run.results["q0"].finish_reason, FinishReason::kLength);
  EXPECT_EQ(run.results["q0"].tokens, ReferenceGreedy(source_, requests[0]));
  EXPECT_EQ(run.results["q1"].finish_reason, FinishReason::kError);
  EXPECT_NE(run.results["q1"].error.find("exceeds the model's context of 64"), std::string::npos)
      << run.results["q1"].error;
  EXPECT_EQ(run.results["q2"].finish_reason, FinishReason::kError);
  EXPECT_NE(run.results["q2"].error.find("empty prompt"), std::string::npos);
  EXPECT_EQ(run.results["q3"].finish_reason, FinishReason::kError);
  EXPECT_NE(run.results["q3"].error.find("300"), std::string::npos);
  EXPECT_EQ(run.results["q4"].finish_reason, FinishReason::kError);
  EXPECT_NE(run.results["q4"].error.find("KV blocks"), std::string::npos);
  EXPECT_EQ(run.results["q5"].finish_reason, FinishReason::kLength);
  EXPECT_TRUE(run.results["q5"].tokens.empty());
  for (const auto& [id, r] : run.results) {
    EXPECT_TRUE(r.finish_reason != FinishReason::kError || r.tokens.empty()) << id;
  }
}

TEST_F(EngineTest, BadOptionsAreInvalidArgument) {
  std::unique_ptr<WeightPool> pool = MakeLocalPool(weights_);
  PagedKvCache cache(weights_.config, 4, 4);
  EngineOptions options;
  options.max_batch_tokens = 0;
  InferenceEngine engine(weights_, *pool, cache, options);
  EXPECT_EQ(engine.Run({Request(0, 3, 2)}, [](const GenerationResult&) {}).code(),
            StatusCode::kInvalidArgument);
}

TEST_F(EngineTest, SamplingIsSeededPerRequest) {
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 6; ++i) requests.push_back(Request(i, 3 + 4 * i, 10));
  EngineOptions options;
  options.sampling = {0.9, 40, 0.95, 2024};
  GenRun a = Generate(weights_, requests, 64, 8, options);
  // Another batch composition: a tight cache, small passes, the requests in
  // reverse order and without request 2.
  std::vector<GenerationRequest> others(requests.rbegin(), requests.rend());
  others.erase(others.begin() + 3);
  EngineOptions tight = options;
  tight.max_batch_tokens = 5;
  GenRun b = Generate(weights_, others, 8, 4, tight);
  for (const GenerationRequest& r : others) {
    EXPECT_EQ(a.results[r.id].tokens, b.results[r.id].tokens) << r.id;
  }
  // The sampling is not greedy in disguise, and the seed matters.
  options.sampling.seed = 7;
  GenRun c = Generate(weights_, requests, 64, 8, options);
  int differ_seed = 0, differ_greedy = 0;
  for (const GenerationRequest& r : requests) {
    differ_seed += a.results[r.id].tokens != c.results[r.id].tokens;
    differ_greedy += a.results[r.id].tokens != ReferenceGreedy(source_, r);
  }
  EXPECT_GT(differ_seed, 0);
  EXPECT_GT(differ_greedy, 0);
}

TEST_F(EngineTest, TopKOneIsGreedy) {
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 4; ++i) requests.push_back(Request(i, 4 + 3 * i, 8));
  EngineOptions options;
  options.sampling = {1.5, 1, 1.0, 99};
  GenRun run = Generate(weights_, requests, 32, 8, options);
  for (const GenerationRequest& r : requests) {
    EXPECT_EQ(run.results[r.id].tokens, ReferenceGreedy(source_, r)) << r.id;
  }
}

// A pool that behaves like auto committing after `drop_after` passes: it
// reports 16 freed KV blocks once. Everything else is the local pool.
class DroppingPool final : public WeightPool {
 public:
  DroppingPool(std::unique_ptr<WeightPool> inner, int drop_after)
      : inner_(std::move(inner)), drop_after_(drop_after) {}
  Status BeginPass(int64_t rows) override { return inner_->BeginPass(rows); }
  Result<at::Tensor> PreAttention(int layer, const at::Tensor& x) override {
    return inner_->PreAttention(layer, x);
  }
  Result<at::Tensor> PostAttention(int layer, const at::Tensor& x, const at::Tensor& a) override {
    return inner_->PostAttention(layer, x, a);
  }
  Status EndPass() override {
    ++passes_;
    return inner_->EndPass();
  }
  int64_t HeldBytes() const override { return inner_->HeldBytes(); }
  PoolStats stats() const override { return inner_->stats(); }
  PoolMode mode() const override { return PoolMode::kAuto; }
  int n_layers() const override { return inner_->n_layers(); }
  Status Finish() override { return inner_->Finish(); }
  int64_t TakeReleasedKvBlocks() override {
    if (passes_ < drop_after_ || taken_) return 0;
    taken_ = true;
    return 16;
  }

 private:
  std::unique_ptr<WeightPool> inner_;
  int drop_after_, passes_ = 0;
  bool taken_ = false;
};

// When auto commits and frees memory, the KV blocks it frees join at once
// (16 of the 24 held back: a commitment releases its own swap only):
// later passes run more sequences, outputs stay the reference's.
TEST_F(EngineTest, BlocksFreedByADroppedWeightCacheAreUsed) {
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 12; ++i) requests.push_back(Request(i, 6 + i % 5, 10));
  EngineOptions options;
  DroppingPool pool(MakeLocalPool(weights_), /*drop_after=*/3);
  // 8 blocks of 4: about two sequences at once; 24 more held back.
  PagedKvCache cache(weights_.config, 8, 4, /*held_back=*/24);
  InferenceEngine engine(weights_, pool, cache, options);
  std::map<std::string, GenerationResult> results;
  ASSERT_TRUE(engine.Run(requests, [&](const GenerationResult& r) { results[r.id] = r; }).ok());
  EXPECT_EQ(cache.num_blocks(), 24);
  EXPECT_EQ(cache.held_back_blocks(), 8);
  EXPECT_EQ(cache.free_blocks(), 24);
  EXPECT_GE(engine.stats().peak_sequences, 6);  // more than the 8 blocks could hold
  for (const GenerationRequest& r : requests) {
    EXPECT_EQ(results.at(r.id).tokens, ReferenceGreedy(source_, r)) << r.id;
  }
}

// PassFlops by hand, and the engine's totals: every pass counted, the
// decode-only passes apart.
TEST_F(EngineTest, PassFlopsCountTheModelsArithmetic) {
  const ModelConfig& c = weights_.config;  // d 64, 3 layers, mlp 4, vocab 256
  std::vector<SequenceChunk> chunks = {{0, {1, 2, 3}, 0}, {1, {4}, 5}};
  const double d = c.d_model, block = (4 + 2.0 * c.mlp_ratio) * d * d;
  // 4 rows; attention: rows see 1, 2, 3 and 6 keys (12 in all), 2·d MACs each.
  const double expected = 2 * (c.n_layers * (4 * block + 12 * 2 * d) + 2 * d * c.vocab_size);
  EXPECT_DOUBLE_EQ(PassFlops(c, chunks), expected);

  std::vector<GenerationRequest> requests = {Request(0, 5, 6), Request(1, 3, 6)};
  GenRun run = Generate(weights_, requests, 16, 4, EngineOptions{});
  EXPECT_GT(run.stats.flops, 0);
  // Pass 1 prefills both prompts and samples a token each; then 5 passes
  // decode both sequences (one row each).
  EXPECT_EQ(run.stats.steps, 6);
  EXPECT_EQ(run.stats.decode_passes, 5);
  EXPECT_EQ(run.stats.decode_rows, 10);
  EXPECT_LT(run.stats.decode_flops, run.stats.flops);
  EXPECT_GT(run.stats.decode_seconds, 0);
  EXPECT_GT(run.stats.decode_attention_seconds, 0);
  EXPECT_LT(run.stats.decode_attention_seconds, run.stats.decode_seconds);
}

TEST_F(EngineTest, DecoderRejectsBadChunks) {
  std::unique_ptr<WeightPool> pool = MakeLocalPool(weights_);
  PagedKvCache cache(weights_.config, 4, 4);
  ASSERT_TRUE(cache.Reserve(0, 8));
  EXPECT_EQ(ForwardChunks(weights_, *pool, cache, {}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ForwardChunks(weights_, *pool, cache, {{0, {1, 2, 3}, 6}}).status().code(),
            StatusCode::kInvalidArgument);  // beyond the reservation
  EXPECT_EQ(ForwardChunks(weights_, *pool, cache, {{0, {256}, 0}}).status().code(),
            StatusCode::kInvalidArgument);
  Result<at::Tensor> ok = ForwardChunks(weights_, *pool, cache, {{0, {1, 2, 3}, 0}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->sizes(), (std::vector<int64_t>{1, 256}));
}

TEST(QueueChunkTest, AnEighthOfEachRanksSharePerClaimWithinOneToSixteen) {
  EXPECT_EQ(QueueChunk(0, 128, 2), 8);
  EXPECT_EQ(QueueChunk(0, 100000, 4), 16);
  EXPECT_EQ(QueueChunk(0, 5, 4), 1);
  EXPECT_EQ(QueueChunk(0, 0, 4), 1);
  EXPECT_EQ(QueueChunk(3, 128, 2), 3) << "the user's choice wins";
}

TEST(SamplingTest, GreedyTakesLowestIdOnTies) {
  EXPECT_EQ(GreedyToken(at::tensor(std::vector<float>{1, 3, 2, 3})), 1);
  EXPECT_EQ(GreedyToken(at::tensor(std::vector<float>{NAN, 0, -1})), 1);
  at::Generator gen = RequestGenerator(1, 0);
  SamplingOptions top1{2.0, 1, 1.0, 1};
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(SampleToken(at::tensor(std::vector<float>{0, 5, 5, 1}), top1, gen), 1);
  }
}

TEST(SamplingTest, FrequenciesFollowTheDistribution) {
  // softmax([0, log 3]) = [0.25, 0.75].
  at::Tensor logits = at::tensor(std::vector<float>{0, std::log(3.0f), -1e9f});
  at::Generator gen = RequestGenerator(5, 3);
  SamplingOptions plain{1.0, 0, 1.0, 5};
  int ones = 0;
  const int draws = 8000;
  for (int i = 0; i < draws; ++i) ones += SampleToken(logits, plain, gen) == 1;
  EXPECT_NEAR(ones / double(draws), 0.75, 0.03);
  // Temperature 2: softmax([0, log 3] / 2) = [1, sqrt 3] / (1 + sqrt 3).
  SamplingOptions hot{2.0, 0, 1.0, 5};
  ones = 0;
  for (int i = 0; i < draws; ++i) ones += SampleToken(logits, hot, gen) == 1;
  EXPECT_NEAR(ones / double(draws), std::sqrt(3.0) / (1 + std::sqrt(3.0)), 0.03);
}

TEST(SamplingTest, TopPCutsTheTail) {
  // Probabilities 0.5, 0.3, 0.2: top_p 0.7 keeps the first two.
  at::Tensor logits = at::log(at::tensor(std::vector<float>{0.2f, 0.5f, 0.3f}));
  at::Generator gen = RequestGenerator(8, 0);
  SamplingOptions nucleus{1.0, 0, 0.7, 8};
  std::map<int64_t, int> counts;
  for (int i = 0; i < 4000; ++i) ++counts[SampleToken(logits, nucleus, gen)];
  EXPECT_EQ(counts[0], 0);
  EXPECT_NEAR(counts[1] / 4000.0, 0.5 / 0.8, 0.03);
  // top_k 2 gives the same set.
  SamplingOptions topk{1.0, 2, 1.0, 8};
  counts.clear();
  for (int i = 0; i < 4000; ++i) ++counts[SampleToken(logits, topk, gen)];
  EXPECT_EQ(counts[0], 0);
}

TEST(SamplingTest, GeneratorsAreReproducibleAndDistinct) {
  at::Tensor logits = at::zeros({256});
  SamplingOptions o{1.0, 0, 1.0, 3};
  auto draw = [&](uint64_t seed, int64_t index) {
    at::Generator gen = RequestGenerator(seed, index);
    std::vector<int64_t> out;
    for (int i = 0; i < 16; ++i) out.push_back(SampleToken(logits, o, gen));
    return out;
  };
  EXPECT_EQ(draw(3, 4), draw(3, 4));
  EXPECT_NE(draw(3, 4), draw(3, 5));
  EXPECT_NE(draw(3, 4), draw(4, 4));
}

}  // namespace
}  // namespace pw
