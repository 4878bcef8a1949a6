// EstimateCostModel against numbers computed by hand for a small model.
#include "search/model_costs.h"

#include <gtest/gtest.h>

namespace pw {
namespace {

// vocab 16, d 8, 2 blocks, 2 heads, seq 4, MLP hidden 16, biases.
ModelConfig SmallModel() {
  ModelConfig m;
  m.vocab_size = 16;
  m.d_model = 8;
  m.n_layers = 2;
  m.n_heads = 2;
  m.seq_len = 4;
  m.mlp_ratio = 2;
  return m;
}

TEST(ModelCostsTest, TwoSequentialStagesMatchHandComputedNumbers) {
  const ModelConfig model = SmallModel();
  Result<ModelPartition> partition = PartitionModel(model, 2, "1,1");
  ASSERT_TRUE(partition.ok()) << partition.status().ToString();
  Result<Placement> placement = Placement::Sequential(2);
  ASSERT_TRUE(placement.ok());
  const CostModel costs = EstimateCostModel(model, *partition, /*microbatch_size=*/2, *placement);

  // Forward FLOPs per sequence: embedding 2·4·8 = 64; a block 1536 (qkv) +
  // 256 + 256 (attention matmuls) + 512 (projection) + 1024 + 1024 (MLP) =
  // 4608; the head 2·4·8·16 + 3·4·16 = 1216.
  ASSERT_EQ(costs.stages.size(), 2u);
  const double forward[] = {64 + 4608, 4608 + 1216};
  // Activations, microbatch of 2: a block 2·4·2·8·(34 + 5·2·4/8) = 4992;
  // the embedding 4·4·2·8 = 256; the head 4·2·4·2·16 = 1024.
  const double activations[] = {4992 + 256, 4992 + 1024};
  for (int s = 0; s < 2; ++s) {
    const StageCost& c = costs.stages[s];
    EXPECT_DOUBLE_EQ(*c.forward, forward[s]) << "stage " << s;
    EXPECT_DOUBLE_EQ(*c.backward, 2 * forward[s]);
    EXPECT_DOUBLE_EQ(*c.backward_input, forward[s]);
    EXPECT_DOUBLE_EQ(*c.backward_weight, forward[s]);
    EXPECT_DOUBLE_EQ(c.activation_bytes, activations[s]);
  }
  // Parameters: a block 600 (LayerNorms 32, qkv 216, projection 72, MLP 144
  // + 136); embedding (16 + 4)·8 = 160; head 2·8 + 8·16 = 144. 16 bytes each.
  ASSERT_EQ(costs.static_bytes.size(), 2u);
  EXPECT_DOUBLE_EQ(costs.static_bytes[0], 16.0 * (160 + 600));
  EXPECT_DOUBLE_EQ(costs.static_bytes[1], 16.0 * (600 + 144));
  EXPECT_DOUBLE_EQ(costs.static_bytes[0] + costs.static_bytes[1], 16.0 * CountParameters(model));
}

TEST(ModelCostsTest, StaticBytesFollowThePlacement) {
  // V-shape on 2 ranks: stages 0 and 3 on rank 0, stages 1 and 2 on rank 1.
  const ModelConfig model = SmallModel();
  Result<ModelPartition> partition = PartitionModel(model, 4, "0,1,1,0");
  ASSERT_TRUE(partition.ok()) << partition.status().ToString();
  Result<Placement> placement = Placement::VShape(2);
  ASSERT_TRUE(placement.ok());
  const CostModel costs = EstimateCostModel(model, *partition, 1, *placement);
  ASSERT_EQ(costs.stages.size(), 4u);
  ASSERT_EQ(costs.static_bytes.size(), 2u);
  EXPECT_DOUBLE_EQ(costs.static_bytes[0], 16.0 * (160 + 144));
  EXPECT_DOUBLE_EQ(costs.static_bytes[1], 16.0 * (600 + 600));
  EXPECT_DOUBLE_EQ(*costs.stages[0].forward, 64);
  EXPECT_DOUBLE_EQ(costs.stages[3].activation_bytes, 4.0 * 2 * 4 * 1 * 16);
}

TEST(ModelCostsTest, ParametersWithoutBiasesMatchCountParameters) {
  ModelConfig model = SmallModel();
  model.bias = false;
  Result<ModelPartition> partition = PartitionModel(model, 2, "");
  ASSERT_TRUE(partition.ok());
  double total = 0;
  for (const StageSpan& span : partition->stages) total += EstimateStageParameters(model, span);
  EXPECT_DOUBLE_EQ(total, static_cast<double>(CountParameters(model)));
}

}  // namespace
}  // namespace pw
