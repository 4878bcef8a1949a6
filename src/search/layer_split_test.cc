#include "search/layer_split.h"
#include "search/model_profile.h"

#include <gtest/gtest.h>

#include <vector>

namespace pw::search {
namespace {

StageSpan Span(int stage, int first, int n, bool embedding, bool head) {
  StageSpan s;
  s.stage = stage;
  s.first_block = first;
  s.num_blocks = n;
  s.has_embedding = embedding;
  s.has_head = head;
  return s;
}

StageCost Measured(double f, double b, double out_bytes) {
  StageCost c;
  c.forward = f;
  c.backward = b;
  c.output_bytes = out_bytes;
  return c;
}

TEST(LayerSplitTest, SharesStageTimesByEstimatedFlops) {
  // Blocks of weight 2 each; embedding 1 (on layer 0), head 4 (on layer 3).
  const LayerCosts flops{1, {2, 2, 2, 2}, 4};
  ModelPartition partition;
  partition.stages = {Span(0, 0, 1, true, false), Span(1, 1, 3, false, true)};
  // Stage 0: embedding + block 0 (weights 1 + 2); stage 1: blocks 1-3 and the head (2+2+2+4).
  Result<std::vector<StageCost>> layers =
      SplitStageCostsIntoLayers({Measured(3, 6, 64), Measured(10, 20, 32)}, partition, flops);
  ASSERT_TRUE(layers.ok()) << layers.status().ToString();
  ASSERT_EQ(layers->size(), 4u);
  const std::vector<double> forward = {3, 2, 2, 6};  // layer 0 all of stage 0; layer 3 block + head
  for (int l = 0; l < 4; ++l) {
    EXPECT_DOUBLE_EQ(*(*layers)[l].forward, forward[l]) << l;
    EXPECT_DOUBLE_EQ(*(*layers)[l].backward, 2 * forward[l]) << l;
    EXPECT_FALSE((*layers)[l].backward_input.has_value());  // the stages gave B: so do the layers
  }
  EXPECT_DOUBLE_EQ((*layers)[0].output_bytes, 64);
  EXPECT_DOUBLE_EQ((*layers)[2].output_bytes, 32);
}

// Stage 0: the embedding alone; stage 1: blocks 0 and 1 (FLOPs 1 : 3);
// stage 2: the head alone.
ModelPartition EmbeddingBlocksHead() {
  ModelPartition partition;
  partition.stages = {Span(0, 0, 0, true, false), Span(1, 0, 2, false, false), Span(2, 2, 0, false, true)};
  return partition;
}

// Split backward on three stages: F = 1, 2, 3; I = 2, W = 4.
std::vector<StageCost> ThreeSplitStages() {
  std::vector<StageCost> stages(3);
  for (int s = 0; s < 3; ++s) {
    stages[s].forward = 1.0 + s;
    stages[s].backward_input = 2.0;
    stages[s].backward_weight = 4.0;
  }
  return stages;
}

TEST(LayerSplitTest, KeepsSplitBackwardAndStagesWithoutBlocks) {
  const LayerCosts flops{1, {1, 3}, 1};
  const ModelPartition partition = EmbeddingBlocksHead();
  const std::vector<StageCost> stages = ThreeSplitStages();
  Result<std::vector<StageCost>> layers = SplitStageCostsIntoLayers(stages, partition, flops);
  ASSERT_TRUE(layers.ok()) << layers.status().ToString();
  ASSERT_EQ(layers->size(), 2u);
  // Layer 0: all of stage 0 plus a quarter of stage 1; layer 1: the rest plus stage 2.
  EXPECT_DOUBLE_EQ(*(*layers)[0].forward, 1 + 0.25 * 2);
  EXPECT_DOUBLE_EQ(*(*layers)[1].forward, 0.75 * 2 + 3);
  EXPECT_DOUBLE_EQ(*(*layers)[0].backward_input, 2 + 0.5);
  EXPECT_DOUBLE_EQ(*(*layers)[1].backward_weight, 3 + 4);
  EXPECT_FALSE((*layers)[0].backward.has_value());
}

// A profile of a recomputing run: RECOMPUTE and the after-recompute
// backward are shared like F and the backward, the plain times standing in
// for a stage without them (stage 0 here), and StageCostsFor sums them back.
TEST(LayerSplitTest, SharesRecomputationsOwnTimes) {
  const LayerCosts flops{1, {1, 3}, 1};
  const ModelPartition partition = EmbeddingBlocksHead();
  const std::vector<StageCost> plain = ThreeSplitStages();
  std::vector<StageCost> stages = plain;
  stages[1].recompute = 1.6;
  stages[1].backward_input_after_recompute = 1.2;
  stages[1].backward_weight_after_recompute = 3.6;
  Result<std::vector<StageCost>> layers = SplitStageCostsIntoLayers(stages, partition, flops);
  ASSERT_TRUE(layers.ok()) << layers.status().ToString();
  ASSERT_EQ(layers->size(), 2u);
  EXPECT_DOUBLE_EQ(*(*layers)[0].recompute, 1 + 0.25 * 1.6);
  EXPECT_DOUBLE_EQ(*(*layers)[0].backward_input_after_recompute, 2 + 0.25 * 1.2);
  EXPECT_DOUBLE_EQ(*(*layers)[1].backward_weight_after_recompute, 0.75 * 3.6 + 4);
  EXPECT_FALSE((*layers)[0].backward_after_recompute.has_value());  // the stages gave I and W

  ModelProfile profile;
  Result<std::vector<StageCost>> resolved = ResolveCostEntries(*layers);
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  profile.pieces = *resolved;
  profile.layers = true;
  const std::vector<StageCost> one = StageCostsFor(profile, {0, 2});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_DOUBLE_EQ(*one[0].recompute, 1 + 1.6 + 3);
  EXPECT_DOUBLE_EQ(*one[0].backward_input_after_recompute, 2 + 1.2 + 2);
  EXPECT_DOUBLE_EQ(*one[0].backward_after_recompute, 2 + 1.2 + 2 + 4 + 3.6 + 4);
  profile.pieces = *ResolveCostEntries(plain);  // without recomputation's times: none summed
  EXPECT_FALSE(StageCostsFor(profile, {0, 3})[0].recompute.has_value());
  EXPECT_FALSE(StageCostsFor(profile, {0, 3})[0].HasBackwardAfterRecompute());
}

TEST(LayerSplitTest, TotalsMatchTheStagesForARealModel) {
  ModelConfig model;  // the built-in tiny model
  Result<ModelPartition> partition = PartitionExplicit(model, std::vector<int>{1, 2, 1});
  ASSERT_TRUE(partition.ok()) << partition.status().ToString();
  const std::vector<StageCost> stages = {Measured(5, 9, 8), Measured(7, 15, 8), Measured(6, 11, 8)};
  Result<std::vector<StageCost>> layers =
      SplitStageCostsIntoLayers(stages, *partition, EstimateLayerCosts(model));
  ASSERT_TRUE(layers.ok()) << layers.status().ToString();
  ASSERT_EQ(static_cast<int>(layers->size()), model.n_layers);
  double f = 0, b = 0;
  for (const StageCost& c : *layers) {
    f += *c.forward;
    b += *c.backward;
  }
  EXPECT_NEAR(f, 18, 1e-9);
  EXPECT_NEAR(b, 35, 1e-9);
  // Stage 1 holds two equal blocks: they share it evenly.
  EXPECT_NEAR(*(*layers)[1].forward, 3.5, 1e-9);
  EXPECT_NEAR(*(*layers)[2].forward, 3.5, 1e-9);
}

TEST(LayerSplitTest, RejectsMismatches) {
  const LayerCosts flops{1, {1, 1}, 1};
  ModelPartition partition;
  partition.stages = {Span(0, 0, 1, true, false), Span(1, 1, 1, false, true)};
  EXPECT_EQ(SplitStageCostsIntoLayers({Measured(1, 2, 0)}, partition, flops).status().code(),
            StatusCode::kInvalidArgument);
  partition.stages[1].num_blocks = 5;
  Result<std::vector<StageCost>> out = SplitStageCostsIntoLayers({Measured(1, 2, 0), Measured(1, 2, 0)}, partition, flops);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("stage 1 holds blocks 1..5"), std::string::npos) << out.status().message();
  EXPECT_FALSE(SplitStageCostsIntoLayers({}, ModelPartition{}, LayerCosts{}).ok());
}

}  // namespace
}  // namespace pw::search
