// PlanMemory: the byte identity for many budgets, modes and ranks; the
// weights it charges equal what LoadModelWeights + the pool really hold;
// the smallest budget that works is the one the error names.
#include "infer/memory_plan.h"

#include <gtest/gtest.h>

#include "infer/kv_cache.h"
#include "infer/model_weights.h"
#include "infer/infer_test_util.h"

namespace pw {
namespace {

ModelConfig SmallConfig() { return SmallTestConfig(64, 4, 64); }

MemoryPlanInput Input(PoolMode mode, int rank, int world, int64_t budget) {
  MemoryPlanInput in;
  in.config = SmallConfig();
  in.pool.mode = mode;
  in.rank = rank;
  in.world = world;
  in.budget_bytes = budget;
  in.block_size = 16;
  in.max_batch_tokens = 128;
  return in;
}

TEST(MemoryPlanTest, IdentityHoldsEverywhere) {
  const ModelConfig c = SmallConfig();
  for (PoolMode mode : {PoolMode::kReplicate, PoolMode::kWas, PoolMode::kCas, PoolMode::kAuto}) {
    for (int world : {1, 2, 4}) {
      for (int rank = 0; rank < world; ++rank) {
        for (int64_t budget : {int64_t{3} << 20, int64_t{5} << 20, (int64_t{7} << 20) + 12345,
                               int64_t{64} << 20}) {
          Result<MemoryPlan> plan = PlanMemory(Input(mode, rank, world, budget));
          ASSERT_TRUE(plan.ok()) << PoolModeName(mode) << " " << plan.status().ToString();
          const MemoryPlan& p = *plan;
          EXPECT_EQ(p.weights + p.weight_cache + p.workspace + p.serving + p.kv + p.slack, budget);
          const bool serves = world > 1 && (mode == PoolMode::kCas || mode == PoolMode::kAuto);
          EXPECT_EQ(p.serving, serves ? ServingBytes(c, 128, world) : 0);
          EXPECT_EQ(p.budget, budget);
          const int64_t block = PagedKvCache::BlockBytes(c, 16);
          EXPECT_EQ(p.kv, p.kv_blocks * block);
          EXPECT_GE(p.slack, 0);
          EXPECT_LT(p.slack, block);
          EXPECT_EQ(p.kv_capacity_tokens, p.kv_blocks * 16);
          EXPECT_EQ(PagedKvCache(c, p.kv_blocks, 16).bytes(), p.kv);
          PoolOptions pool = Input(mode, rank, world, budget).pool;
          pool.start_without_cache = p.auto_without_cache;
          EXPECT_TRUE(!p.auto_without_cache || mode == PoolMode::kAuto);
          EXPECT_EQ(p.weights + p.weight_cache,
                    4 * (2LL * c.vocab_size * c.d_model + c.seq_len * c.d_model + 2 * c.d_model) +
                        PoolHeldBytes(pool, c, rank, world));
          EXPECT_EQ(p.workspace, WorkspaceBytes(c, 128));
          EXPECT_FALSE(DescribePlan(p).empty());
        }
      }
    }
  }
}

// An fp16 cache: the same bytes buy twice the positions (up to a block of
// slack), and the cache built from the plan is exactly its kv bytes.
TEST(MemoryPlanTest, Fp16KvHoldsTwiceThePositions) {
  const ModelConfig c = SmallConfig();
  for (PoolMode mode : {PoolMode::kReplicate, PoolMode::kCas}) {
    MemoryPlanInput in = Input(mode, 0, 2, int64_t{7} << 20);
    const Result<MemoryPlan> fp32 = PlanMemory(in);
    in.kv_dtype = KvDtype::kFp16;
    const Result<MemoryPlan> fp16 = PlanMemory(in);
    ASSERT_TRUE(fp32.ok() && fp16.ok());
    EXPECT_EQ(fp16->kv_dtype, KvDtype::kFp16);
    EXPECT_GE(fp16->kv_blocks, 2 * fp32->kv_blocks);
    EXPECT_LE(fp16->kv_blocks, 2 * fp32->kv_blocks + 1);
    EXPECT_EQ(fp16->weights + fp16->weight_cache + fp16->workspace + fp16->serving + fp16->kv +
                  fp16->slack,
              in.budget_bytes);
    EXPECT_EQ(PagedKvCache(c, fp16->kv_blocks, 16, 0, KvDtype::kFp16).bytes(), fp16->kv);
    EXPECT_NE(DescribePlan(*fp16).find("fp16"), std::string::npos) << DescribePlan(*fp16);
  }
}

// Auto's swaps: with its weight cache freed (a CaS commitment), the KV
// cache grows to what a CaS plan of the same budget holds; with the serving
// reserve freed (every rank committed to WaS), to what a WaS plan holds;
// never beyond the budget.
TEST(MemoryPlanTest, AutoSwapsForTheKvBlocksOfTheModeItCommitsTo) {
  const int64_t block = PagedKvCache::BlockBytes(SmallConfig(), 16);
  for (int world : {2, 4}) {
    for (int64_t budget : {int64_t{5} << 20, (int64_t{7} << 20) + 12345, int64_t{64} << 20}) {
      Result<MemoryPlan> automatic = PlanMemory(Input(PoolMode::kAuto, 1, world, budget));
      Result<MemoryPlan> cas = PlanMemory(Input(PoolMode::kCas, 1, world, budget));
      Result<MemoryPlan> was = PlanMemory(Input(PoolMode::kWas, 1, world, budget));
      ASSERT_TRUE(automatic.ok() && cas.ok() && was.ok());
      EXPECT_FALSE(automatic->auto_without_cache) << "a cache fits at every budget here";
      EXPECT_GT(automatic->weight_cache, 0);
      EXPECT_GT(automatic->kv_swap_blocks, 0);
      EXPECT_GT(automatic->kv_was_swap_blocks, 0);
      EXPECT_EQ(automatic->kv_blocks + automatic->kv_swap_blocks, cas->kv_blocks);
      EXPECT_EQ(automatic->kv_blocks + automatic->kv_was_swap_blocks, was->kv_blocks);
      EXPECT_LE(automatic->weights + automatic->workspace + automatic->serving +
                    (automatic->kv_blocks + automatic->kv_swap_blocks) * block,
                budget);
      EXPECT_LE(automatic->weights + automatic->weight_cache + automatic->workspace +
                    (automatic->kv_blocks + automatic->kv_was_swap_blocks) * block,
                budget);
      const std::string text = DescribePlan(*automatic);
      EXPECT_NE(text.find("if auto commits to CaS"), std::string::npos) << text;
      EXPECT_NE(text.find("if every rank's auto commits to WaS"), std::string::npos) << text;
    }
  }
  for (PoolMode mode : {PoolMode::kReplicate, PoolMode::kWas, PoolMode::kCas}) {
    const Result<MemoryPlan> plan = PlanMemory(Input(mode, 0, 2, int64_t{64} << 20));
    EXPECT_EQ(plan->kv_swap_blocks, 0);
    EXPECT_EQ(plan->kv_was_swap_blocks, 0);
  }
  EXPECT_EQ(PlanMemory(Input(PoolMode::kAuto, 0, 1, int64_t{64} << 20))->kv_swap_blocks, 0);
}

// Where the weight cache does not fit beside one sequence's KV, auto goes
// without one (CaS's plan); with room, it keeps it.
TEST(MemoryPlanTest, AutoGoesWithoutACacheOnlyWhenOneDoesNotFit) {
  const ModelConfig c = SmallConfig();
  const int64_t block = PagedKvCache::BlockBytes(c, 16);
  Result<MemoryPlan> roomy = PlanMemory(Input(PoolMode::kAuto, 1, 2, int64_t{64} << 20));
  ASSERT_TRUE(roomy.ok());
  EXPECT_FALSE(roomy->auto_without_cache);
  // The smallest budget of a CaS plan plus a little: the cache cannot fit
  // beside one sequence's KV, so auto plans as CaS.
  Result<MemoryPlan> cas = PlanMemory(Input(PoolMode::kCas, 1, 2, int64_t{64} << 20));
  ASSERT_TRUE(cas.ok());
  const int64_t tight = cas->held() + 8 * block;
  Result<MemoryPlan> automatic = PlanMemory(Input(PoolMode::kAuto, 1, 2, tight));
  ASSERT_TRUE(automatic.ok()) << automatic.status().ToString();
  EXPECT_TRUE(automatic->auto_without_cache);
  EXPECT_EQ(automatic->weight_cache, 0);
  EXPECT_EQ(automatic->kv_swap_blocks, 0);
  EXPECT_EQ(automatic->kv_was_swap_blocks, 0);
  EXPECT_EQ(automatic->kv_blocks, PlanMemory(Input(PoolMode::kCas, 1, 2, tight))->kv_blocks);
  EXPECT_NE(DescribePlan(*automatic).find("without a weight cache"), std::string::npos);
}

// A budget that holds 2 weight-cache slots but not the 3 asked for: auto
// plans with 2 (both modes open) rather than without a cache.
TEST(MemoryPlanTest, AutoShrinksItsCacheToFitBeforeGoingWithoutOne) {
  MemoryPlanInput two = Input(PoolMode::kAuto, 0, 2, int64_t{64} << 20);
  two.config.n_layers = 8;  // 4 remote blocks at world 2: room for 3 slots
  two.pool.cache_slots = 2;
  Result<MemoryPlan> roomy2 = PlanMemory(two);
  ASSERT_TRUE(roomy2.ok());
  EXPECT_EQ(roomy2->cache_slots, 2);
  const int64_t one_sequence = ((two.config.seq_len + 15) / 16) * PagedKvCache::BlockBytes(two.config, 16);
  MemoryPlanInput tight = two;
  tight.pool.cache_slots = 3;
  tight.budget_bytes = roomy2->held() + one_sequence + BlockBytes(two.config) / 2;
  Result<MemoryPlan> plan = PlanMemory(tight);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->auto_without_cache);
  EXPECT_EQ(plan->cache_slots, 2);
  EXPECT_EQ(plan->weight_cache, 2 * BlockBytes(two.config));
  EXPECT_NE(DescribePlan(*plan).find("(2 slots)"), std::string::npos) << DescribePlan(*plan);
  EXPECT_EQ(plan->weights + plan->weight_cache + plan->workspace + plan->serving + plan->kv +
                plan->slack,
            tight.budget_bytes);
}

// Auto that planned fewer slots than asked gets them back when every rank
// commits to WaS: the serving reserve becomes the missing slots and the KV
// blocks a WaS plan of the same budget has beyond auto's, never more than
// the budget.
TEST(MemoryPlanTest, AutoWithFewerSlotsBecomesTheWasPlanOnCommit) {
  MemoryPlanInput in = Input(PoolMode::kAuto, 0, 2, int64_t{64} << 20);
  in.config.n_layers = 8;  // 4 remote blocks at world 2
  in.pool.cache_slots = 3;
  const int64_t kv_block = PagedKvCache::BlockBytes(in.config, 16);
  const int64_t one_sequence = ((in.config.seq_len + 15) / 16) * kv_block;
  // The least budget that holds auto with 3 slots, less one byte: 2 fit.
  Result<MemoryPlan> three = PlanMemory(in);
  ASSERT_TRUE(three.ok());
  ASSERT_EQ(three->cache_slots, 3);
  EXPECT_EQ(three->was_swap_slots, 0) << "nothing to give back when the slots fit";
  in.budget_bytes = three->held() + one_sequence - 1;
  ASSERT_GE(three->serving, BlockBytes(in.config)) << "the premise: the serving reserve holds a slot";
  Result<MemoryPlan> automatic = PlanMemory(in);
  MemoryPlanInput was_in = in;
  was_in.pool.mode = PoolMode::kWas;
  Result<MemoryPlan> was = PlanMemory(was_in);
  ASSERT_TRUE(automatic.ok() && was.ok());
  ASSERT_EQ(automatic->cache_slots, 2);
  ASSERT_EQ(was->cache_slots, 3);
  EXPECT_EQ(automatic->was_swap_slots, 1);
  EXPECT_EQ(automatic->kv_blocks + automatic->kv_was_swap_blocks, was->kv_blocks);
  EXPECT_LE(automatic->weights + (automatic->cache_slots + automatic->was_swap_slots) *
                                     BlockBytes(in.config) +
                automatic->workspace +
                (automatic->kv_blocks + automatic->kv_was_swap_blocks) * kv_block,
            in.budget_bytes);
  EXPECT_NE(DescribePlan(*automatic).find("and +1 cache slots if every rank's auto commits to WaS"),
            std::string::npos)
      << DescribePlan(*automatic);
}

TEST(MemoryPlanTest, WeightsAreWhatTheRankLoads) {
  const ModelConfig c = SmallConfig();
  Result<ModelWeights> all = LoadModelWeights({"", c, 1}, {}, true);
  ASSERT_TRUE(all.ok());
  Result<MemoryPlan> replicate = PlanMemory(Input(PoolMode::kReplicate, 0, 4, 64 << 20));
  ASSERT_TRUE(replicate.ok());
  EXPECT_EQ(replicate->weights, all->HeldBytes());
  EXPECT_EQ(replicate->weight_cache, 0);
  for (int rank = 0; rank < 4; ++rank) {
    Result<ModelWeights> owned = LoadModelWeights({"", c, 1}, OwnedBlocks(rank, 4, c.n_layers));
    ASSERT_TRUE(owned.ok());
    Result<MemoryPlan> cas = PlanMemory(Input(PoolMode::kCas, rank, 4, 64 << 20));
    ASSERT_TRUE(cas.ok());
    EXPECT_EQ(cas->weights, owned->HeldBytes());
    EXPECT_LT(cas->weights, replicate->weights);
    // The blocks it does not hold pay for serving the others and more KV
    // (in this tiny model serving costs more than the blocks it frees).
    EXPECT_GT(cas->kv + cas->serving, replicate->kv);
  }
}

TEST(MemoryPlanTest, TooSmallBudgetNamesTheMinimum) {
  const ModelConfig c = SmallConfig();
  for (PoolMode mode : {PoolMode::kReplicate, PoolMode::kWas, PoolMode::kCas}) {
    Result<MemoryPlan> big = PlanMemory(Input(mode, 1, 2, 64 << 20));
    ASSERT_TRUE(big.ok());
    const int64_t one_sequence = 4 * PagedKvCache::BlockBytes(c, 16);  // 64 positions
    const int64_t minimum = big->held() + one_sequence;
    Result<MemoryPlan> exact = PlanMemory(Input(mode, 1, 2, minimum));
    ASSERT_TRUE(exact.ok()) << exact.status().ToString();
    EXPECT_EQ(exact->kv_blocks, 4);
    EXPECT_EQ(exact->slack, 0);
    Result<MemoryPlan> small = PlanMemory(Input(mode, 1, 2, minimum - 1));
    ASSERT_FALSE(small.ok());
    EXPECT_EQ(small.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(small.status().message().find(std::to_string(minimum) + " B"), std::string::npos)
        << small.status().message();
    EXPECT_NE(small.status().message().find("--memory-budget"), std::string::npos);
  }
}

TEST(MemoryPlanTest, BadInput) {
  EXPECT_EQ(PlanMemory(Input(PoolMode::kWas, 2, 2, 64 << 20)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanMemory(Input(PoolMode::kWas, 0, 2, 0)).status().code(),
            StatusCode::kInvalidArgument);
  MemoryPlanInput in = Input(PoolMode::kWas, 0, 2, 64 << 20);
  in.block_size = 0;
  EXPECT_EQ(PlanMemory(in).status().code(), StatusCode::kInvalidArgument);
}

TEST(MemoryPlanTest, WorkspaceGrowsWithRows) {
  const ModelConfig c = SmallConfig();
  EXPECT_GT(WorkspaceBytes(c, 1), 0);
  EXPECT_LT(WorkspaceBytes(c, 16), WorkspaceBytes(c, 256));
}

// The budget is a cap: a KV cache the prompts cannot fill is not held. The
// plan then holds what it uses (the identity still exact), keeps the
// budget given as budget_cap, never goes below one full-length sequence,
// and offers auto no swap; without a cap, or with a cap above what fits,
// nothing changes.
TEST(MemoryPlanTest, TheKvCacheHoldsNoMoreThanThePromptsCanUse) {
  const ModelConfig c = SmallConfig();
  const int64_t block = PagedKvCache::BlockBytes(c, 16), sequence_blocks = (c.seq_len + 15) / 16;
  for (PoolMode mode : {PoolMode::kReplicate, PoolMode::kWas, PoolMode::kCas, PoolMode::kAuto}) {
    const int64_t budget = int64_t{64} << 20;
    const Result<MemoryPlan> uncapped = PlanMemory(Input(mode, 0, 2, budget));
    ASSERT_TRUE(uncapped.ok());
    for (int64_t wanted : {int64_t{1}, int64_t{10}, int64_t{100}}) {
      MemoryPlanInput in = Input(mode, 0, 2, budget);
      in.kv_blocks_wanted = wanted;
      const Result<MemoryPlan> plan = PlanMemory(in);
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      const MemoryPlan& p = *plan;
      EXPECT_EQ(p.kv_blocks, std::max(wanted, sequence_blocks)) << PoolModeName(mode) << " wanted " << wanted;
      EXPECT_EQ(p.kv, p.kv_blocks * block);
      EXPECT_EQ(p.held() + p.kv + p.slack, p.budget);
      EXPECT_EQ(p.slack, 0);
      EXPECT_EQ(p.budget_cap, budget);
      EXPECT_LT(p.budget, budget);
      EXPECT_EQ(p.held(), uncapped->held()) << "weights, cache, workspace and serving are what they were";
      EXPECT_EQ(p.kv_swap_blocks + p.kv_was_swap_blocks, 0);
      EXPECT_NE(DescribePlan(p).find("what the prompts can use"), std::string::npos) << DescribePlan(p);
    }
    MemoryPlanInput roomy = Input(mode, 0, 2, budget);
    roomy.kv_blocks_wanted = uncapped->kv_blocks + 1;
    const Result<MemoryPlan> same = PlanMemory(roomy);
    ASSERT_TRUE(same.ok());
    EXPECT_EQ(same->kv_blocks, uncapped->kv_blocks);
    EXPECT_EQ(same->budget, budget);
  }
}

}  // namespace
}  // namespace pw
