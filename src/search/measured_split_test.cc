#include "search/measured_split.h"

#include <gtest/gtest.h>

#include "schedule/generators.h"

namespace pw::search {
namespace {

StageCost Times(double f, double i, double w) {
  return {.forward = f, .backward = i + w, .backward_input = i, .backward_weight = w};
}

Schedule Generate(const std::string& family, int p, int m) {
  GeneratorOptions g;
  g.num_ranks = p;
  g.num_microbatches = m;
  Result<Schedule> s = GenerateSchedule(family, g);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return *s;
}

TEST(MeasuredSplitTest, ProfileHasOneEntryPerUnitWithEstimatedBytes) {
  ModelConfig model;  // 4 blocks
  UnitTimings t{Times(0.5, 0.1, 0), Times(2, 2, 1), Times(3, 3, 2)};
  Result<ModelProfile> p = MeasuredUnitProfile(model, t, 2);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->num_pieces(), 6);
  EXPECT_TRUE(p->layers);
  EXPECT_DOUBLE_EQ(*p->pieces[0].forward, 0.5);
  EXPECT_DOUBLE_EQ(*p->pieces[3].backward_input, 2);
  EXPECT_DOUBLE_EQ(*p->pieces[5].backward, 5);
  EXPECT_GT(p->pieces[1].activation_bytes, p->pieces[0].activation_bytes);
  EXPECT_DOUBLE_EQ(p->pieces[1].output_bytes, 4.0 * model.seq_len * 2 * model.d_model);
  EXPECT_DOUBLE_EQ(p->pieces[5].output_bytes, 4.0);

  UnitTimings bad = t;
  bad.block.forward = -1;
  EXPECT_FALSE(MeasuredUnitProfile(model, bad, 2).ok());
}

TEST(MeasuredSplitTest, UnitBoundsAndBlocksPerStageRoundTrip) {
  ModelConfig model;
  for (const char* split : {"0,2,2", "1,3", "2,1,1,0", "4"}) {
    const int stages = 1 + static_cast<int>(std::string(split).size()) / 2;
    Result<ModelPartition> partition = PartitionModel(model, stages, split);
    ASSERT_TRUE(partition.ok()) << split;
    const StageBounds b = UnitBoundsOf(*partition);
    EXPECT_EQ(b.front(), 0);
    EXPECT_EQ(b.back(), model.n_layers + 2);
    EXPECT_EQ(BlocksPerStage(b, model.n_layers), split);
  }
}

TEST(MeasuredSplitTest, AVeryHeavyHeadGetsAStageOfItsOwn) {
  ModelConfig model;  // 4 blocks; the head costs as much as all four
  UnitTimings t{Times(0.01, 0.01, 0), Times(1, 1, 1), Times(4, 4, 4)};
  Result<ModelProfile> p = MeasuredUnitProfile(model, t, 1);
  ASSERT_TRUE(p.ok());
  const Schedule s = Generate("1f1b", 2, 8);
  Result<SplitOutcome> best = BestSplitBySimulation(*p, model.n_layers, s);
  ASSERT_TRUE(best.ok()) << best.status().ToString();
  EXPECT_EQ(best->blocks_per_stage, "4,0");
  // Better than the even split, which the FLOP estimate would favour here.
  Result<SplitOutcome> even = SimulateSplit(*p, model.n_layers, s, {0, 3, 6});
  ASSERT_TRUE(even.ok());
  EXPECT_EQ(even->blocks_per_stage, "2,2");
  EXPECT_LT(best->makespan, even->makespan);
  // A start that does not fit the schedule is ignored, not an error.
  EXPECT_TRUE(BestSplitBySimulation(*p, model.n_layers, s, {{0, 6}}).ok());
}

TEST(MeasuredSplitTest, FailsWhenThereAreMoreStagesThanUnits) {
  ModelConfig model;
  model.n_layers = 1;  // 3 units
  Result<ModelProfile> p = MeasuredUnitProfile(model, {Times(1, 1, 1), Times(1, 1, 1), Times(1, 1, 1)}, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(BestSplitBySimulation(*p, model.n_layers, Generate("zb-v", 2, 4)).ok());
  EXPECT_TRUE(BestSplitBySimulation(*p, model.n_layers, Generate("1f1b", 3, 4)).ok());
}

TEST(MeasuredSplitTest, DescribesTheBlockAndTheHead) {
  EXPECT_EQ(DescribeUnitTimings({StageCost{}, Times(31.2, 33, 30.1), Times(3.1, 3, 3)}),
            "block F 31.2, I 33, W 30.1, B 63.1 ms (I + W = 1.00x B); head F 3.1, B 6 ms");
}

}  // namespace
}  // namespace pw::search
