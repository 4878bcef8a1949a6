#include "model/partitioner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>

namespace pw {
namespace {

ModelConfig Config(int n_layers, int vocab = 256, int d_model = 128, int seq_len = 64) {
  ModelConfig config;
  config.n_layers = n_layers;
  config.vocab_size = vocab;
  config.d_model = d_model;
  config.seq_len = seq_len;
  return config;
}

// Every stage is contiguous, non-empty, and together they cover the model once.
void ExpectWellFormed(const ModelConfig& config, const ModelPartition& partition) {
  int next_block = 0;
  for (int s = 0; s < partition.num_stages(); ++s) {
    const StageSpan& span = partition.stages[s];
    EXPECT_EQ(span.stage, s);
    EXPECT_EQ(span.first_block, next_block);
    EXPECT_EQ(span.has_embedding, s == 0);
    EXPECT_EQ(span.has_head, s == partition.num_stages() - 1);
    EXPECT_TRUE(span.num_blocks > 0 || span.has_embedding || span.has_head);
    next_block += span.num_blocks;
  }
  EXPECT_EQ(next_block, config.n_layers);
}

// The smallest achievable max stage cost, by enumerating every split.
double BruteForceBestMax(const ModelConfig& config, int num_stages) {
  LayerCosts costs = EstimateLayerCosts(config);
  std::vector<double> units{costs.embedding};
  units.insert(units.end(), costs.blocks.begin(), costs.blocks.end());
  units.push_back(costs.head);
  const int n = static_cast<int>(units.size());
  double best = 1e300;
  std::vector<int> bounds{0};
  std::function<void(int, int)> rec = [&](int start, int stages_left) {
    if (stages_left == 1) {
      double worst = std::accumulate(units.begin() + start, units.end(), 0.0);
      for (size_t i = 0; i + 1 < bounds.size(); ++i) {
        worst = std::max(worst, std::accumulate(units.begin() + bounds[i],
                                                units.begin() + bounds[i + 1], 0.0));
      }
      best = std::min(best, worst);
      return;
    }
    for (int end = start + 1; end <= n - (stages_left - 1); ++end) {
      bounds.push_back(end);
      rec(end, stages_left - 1);
      bounds.pop_back();
    }
  };
  rec(0, num_stages);
  return best;
}

TEST(PartitionerTest, CostsCountEmbeddingAndHead) {
  ModelConfig config = Config(4);
  LayerCosts costs = EstimateLayerCosts(config);
  ASSERT_EQ(costs.blocks.size(), 4u);
  // d = 128, T = 64, h = 512: 2·T·(3d² + d² + 2·d·h) + 4·T²·d.
  EXPECT_DOUBLE_EQ(costs.blocks[0], 2.0 * 64 * (3 * 128 * 128 + 128 * 128 + 2 * 128 * 512) +
                                        4.0 * 64 * 64 * 128);
  EXPECT_DOUBLE_EQ(costs.head, 2.0 * 64 * 128 * 256 + 3.0 * 64 * 256);
  EXPECT_GT(costs.embedding, 0);
}

TEST(PartitionerTest, BalancedIsOptimalAndWellFormed) {
  for (int vocab : {256, 8192, 65536}) {
    for (int n_layers : {1, 2, 4, 7, 8}) {
      ModelConfig config = Config(n_layers, vocab);
      for (int s = 1; s <= std::min(n_layers + 2, 5); ++s) {
        Result<ModelPartition> partition = PartitionBalanced(config, s);
        ASSERT_TRUE(partition.ok()) << partition.status().ToString();
        ASSERT_EQ(partition->num_stages(), s);
        ExpectWellFormed(config, *partition);
        double max_cost = 0;
        for (const StageSpan& span : partition->stages) max_cost = std::max(max_cost, span.cost);
        EXPECT_NEAR(max_cost, BruteForceBestMax(config, s), 1e-9 * max_cost)
            << "vocab " << vocab << " n_layers " << n_layers << " stages " << s;
      }
    }
  }
}

TEST(PartitionerTest, BalancedSplitsAnEvenModelEvenlyAndShiftsForAHeavyHead) {
  // 8 equal blocks, a light head (vocab 256): 2+2+2+2 (the head is 15% of a block).
  Result<ModelPartition> light = PartitionBalanced(Config(8), 4);
  ASSERT_TRUE(light.ok());
  EXPECT_EQ(light->BlocksPerStageString(), "2,2,2,2");
  EXPECT_LT(light->Imbalance(), 1.1);
  // A vocabulary of 4096 makes the head cost ~2.5 blocks: the last stage gets fewer.
  Result<ModelPartition> heavy = PartitionBalanced(Config(8, 4096), 4);
  ASSERT_TRUE(heavy.ok());
  EXPECT_LT(heavy->stages.back().num_blocks, heavy->stages.front().num_blocks)
      << heavy->BlocksPerStageString();
}

TEST(PartitionerTest, BalancedErrorsNameTheConstraint) {
  Result<ModelPartition> too_many = PartitionBalanced(Config(4), 7);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(too_many.status().message().find("model.n_layers = 4 into 7 virtual stages"),
            std::string::npos) << too_many.status().message();
  EXPECT_NE(too_many.status().message().find("at most 6 stages"), std::string::npos);
  EXPECT_FALSE(PartitionBalanced(Config(4), 0).ok());
  // The most stages possible: embedding alone, one block each, head alone.
  Result<ModelPartition> most = PartitionBalanced(Config(4), 6);
  ASSERT_TRUE(most.ok());
  EXPECT_EQ(most->BlocksPerStageString(), "0,1,1,1,1,0");
}

TEST(PartitionerTest, ExplicitUnevenSplit) {
  ModelConfig config = Config(8);
  Result<ModelPartition> partition = PartitionModel(config, 3, "2, 3,3");
  ASSERT_TRUE(partition.ok()) << partition.status().ToString();
  ExpectWellFormed(config, *partition);
  EXPECT_EQ(partition->stages[1].first_block, 2);
  EXPECT_EQ(partition->stages[1].num_blocks, 3);
  EXPECT_EQ(partition->BlocksPerStageString(), "2,3,3");
  LayerCosts costs = EstimateLayerCosts(config);
  EXPECT_DOUBLE_EQ(partition->stages[0].cost, costs.embedding + 2 * costs.blocks[0]);
  EXPECT_DOUBLE_EQ(partition->stages[2].cost, 3 * costs.blocks[0] + costs.head);
  // The first and last stage may hold no block.
  Result<ModelPartition> edges = PartitionModel(config, 3, "0,8,0");
  ASSERT_TRUE(edges.ok()) << edges.status().ToString();
  ExpectWellFormed(config, *edges);
  // "balanced" and "" select the balanced partitioner.
  EXPECT_EQ(PartitionModel(config, 4, "balanced")->BlocksPerStageString(), "2,2,2,2");
  // `train` resolves "auto" from measured costs; anywhere else it is the estimate.
  EXPECT_EQ(PartitionModel(config, 4, "auto")->BlocksPerStageString(), "2,2,2,2");
  EXPECT_EQ(PartitionModel(config, 4, "")->BlocksPerStageString(), "2,2,2,2");
}

TEST(PartitionerTest, ExplicitErrorsNameTheConstraint) {
  ModelConfig config = Config(8);
  auto message = [&](int stages, std::string_view spec) {
    Result<ModelPartition> p = PartitionModel(config, stages, spec);
    EXPECT_FALSE(p.ok()) << spec;
    return p.ok() ? std::string() : p.status().message();
  };
  EXPECT_NE(message(3, "2,3,2").find("2,3,2 sum to 7 blocks but model.n_layers is 8"),
            std::string::npos);
  EXPECT_NE(message(3, "4,0,4").find("stage 1 would be empty"), std::string::npos);
  EXPECT_NE(message(4, "2,3,3").find("lists 3 stages but the pipeline has 4 virtual stages"),
            std::string::npos);
  EXPECT_NE(message(3, "2,x,3").find("entry 'x' is not an integer"), std::string::npos);
  EXPECT_NE(message(3, "2,-3,3").find("entry -3 is negative"), std::string::npos);
  EXPECT_NE(message(3, "2,,3").find("entry '' is not an integer"), std::string::npos);
}

}  // namespace
}  // namespace pw
