// PredictSchedule and ExpectedBubbles on a lowered 1F1B: the executor's
// bubble definition, and jitter that only ever adds bubbles.
#include <gtest/gtest.h>

#include "dsl/compiler.h"
#include "dsl/parser.h"
#include "runtime/bubble_prediction.h"
#include "schedule/generators.h"
#include "schedule/lowering.h"

namespace pw {
namespace {

Schedule Lowered1F1B(int p, int m) {
  GeneratorOptions options;
  options.num_ranks = p;
  options.num_microbatches = m;
  Result<Schedule> compute = GenerateSchedule("1f1b", options);
  EXPECT_TRUE(compute.ok()) << compute.status().ToString();
  Result<Schedule> synced = AddGradientSync(*compute);
  Result<Schedule> lowered = InsertCommunication(*synced);
  EXPECT_TRUE(lowered.ok()) << lowered.status().ToString();
  return *lowered;
}

CostModel Uniform(double opt_ms) {
  CostModel costs;
  StageCost c;
  c.forward = 1;
  c.backward = 2;
  costs.stages = {c};
  if (opt_ms > 0) costs.kind_costs["OPT"] = opt_ms;
  return costs;
}

TEST(BubblePrediction, OptimizerTimeCountsAsBubbleLikeTheExecutorCountsIt) {
  const Schedule lowered = Lowered1F1B(2, 4);
  // 1F1B, p = 2, m = 4, F = 1, B = 2: makespan (m + p - 1)(F + B) = 15, compute 12 per rank.
  EXPECT_NEAR(PredictSchedule(lowered, Uniform(0), 0, 4).bubble_ratio, 1 - 24.0 / 30, 1e-12);
  // OPT of 3 at the end of each rank: makespan 18, compute still 24 of 36.
  EXPECT_NEAR(PredictSchedule(lowered, Uniform(3), 0, 4).bubble_ratio, 1 - 24.0 / 36, 1e-12);
}

// A RECOMPUTE is the stage's F run again: busy, like the F it repeats (the
// executor counts it so), not a bubble.
TEST(BubblePrediction, RecomputeCountsAsBusy) {
  Result<dsl::PipeProgram> program = dsl::ParsePipeProgram(
      "ranks 1\nmicrobatches 2\nkind DROP memory=-1 after=F priority=100\n"
      "kind RECOMPUTE memory=1 after=DROP before=B\n",
      "recompute.pipe");
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  Result<Schedule> compute = dsl::CompilePipeProgram(*program);
  ASSERT_TRUE(compute.ok()) << compute.status().ToString();
  Result<Schedule> lowered = InsertCommunication(*AddGradientSync(*compute));
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  // One rank, F = 1, RECOMPUTE = F, B = 2, DROP free: 2 x (1 + 1 + 2) = 8
  // of model arithmetic and nothing else, so no bubble (counting RECOMPUTE
  // as idle would give 2 / 8).
  EXPECT_NEAR(PredictSchedule(*lowered, Uniform(0), 0, 4).bubble_ratio, 0.0, 1e-12);
  Result<double> expected = ExpectedBubbles(*lowered, Uniform(0), {}, 4);
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  EXPECT_NEAR(*expected, 0.0, 1e-12);
  // DROP and sends are not arithmetic; RECOMPUTE and F are.
  const KindRegistry& kinds = lowered->kinds;
  int recomputes = 0, drops = 0;
  for (const Action& a : lowered->programs[0]) {
    const bool arithmetic = IsModelCompute(kinds, a.kind);
    if (IsUserKind(a.kind) && kinds.Info(a.kind).name == kRecomputeKindName) recomputes += arithmetic;
    if (IsUserKind(a.kind) && kinds.Info(a.kind).name == kDropKindName) drops += !arithmetic;
  }
  EXPECT_EQ(recomputes, 2);
  EXPECT_EQ(drops, 2);
}

TEST(BubblePrediction, WithoutJitterTheExpectationIsTheMeanCostPrediction) {
  const Schedule lowered = Lowered1F1B(2, 4);
  ComputeSamples samples;
  samples[{0, ActionKind::kForward}] = {1, 1, 1};
  samples[{1, ActionKind::kBackward}] = {2, 2};
  Result<double> expected = ExpectedBubbles(lowered, Uniform(0), samples, 8);
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  EXPECT_NEAR(*expected, PredictSchedule(lowered, Uniform(0), 0, 4).bubble_ratio, 1e-12);
}

TEST(BubblePrediction, JitterAddsBubblesThatMeanCostsHide) {
  const Schedule lowered = Lowered1F1B(2, 8);
  ComputeSamples samples;
  for (int s = 0; s < 2; ++s) {
    samples[{s, ActionKind::kForward}] = {0.5, 1.5};  // mean 1, as the cost model
    samples[{s, ActionKind::kBackward}] = {1, 3};      // mean 2
  }
  const double at_mean = PredictSchedule(lowered, Uniform(0), 0, 4).bubble_ratio;
  Result<double> expected = ExpectedBubbles(lowered, Uniform(0), samples, 256, 7);
  ASSERT_TRUE(expected.ok());
  EXPECT_GT(*expected, at_mean + 0.02);
  EXPECT_LT(*expected, 0.6);
  // Deterministic for a seed.
  EXPECT_EQ(*expected, *ExpectedBubbles(lowered, Uniform(0), samples, 256, 7));
}

}  // namespace
}  // namespace pw
