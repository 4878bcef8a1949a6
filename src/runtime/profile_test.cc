// MeasuredProfileFile: with the model and its partition, the profile
// carries one cost entry per model block whose sums are the stages'.
#include <gtest/gtest.h>

#include "runtime/profile.h"
#include "sim/cost_model_json.h"

namespace pw {
namespace {

// Two stages, one microbatch, two steps; stage s: F (s+1) ms, B 2(s+1) ms.
std::vector<std::vector<TimelineSpan>> Spans() {
  std::vector<std::vector<TimelineSpan>> ranks(2);
  for (int64_t step = 0; step < 2; ++step) {
    for (int s = 0; s < 2; ++s) {
      TimelineSpan f;
      f.kind = ActionKind::kForward;
      f.stage = s;
      f.microbatch = 0;
      f.step = step;
      f.dur_us = 1000.0 * (s + 1);
      TimelineSpan b = f;
      b.kind = ActionKind::kBackward;
      b.dur_us = 2 * f.dur_us;
      ranks[s].push_back(f);
      ranks[s].push_back(b);
    }
  }
  return ranks;
}

TEST(MeasuredProfileFile, CarriesPerLayerCostsWhenGivenTheModel) {
  ProfileOptions options;
  Result<CostFile> stages_only = MeasuredProfileFile(Spans(), 2, options);
  ASSERT_TRUE(stages_only.ok()) << stages_only.status().ToString();
  EXPECT_TRUE(stages_only->layers.empty());

  Result<ModelPartition> partition = PartitionExplicit(options.model, std::vector<int>{1, 3});
  ASSERT_TRUE(partition.ok()) << partition.status().ToString();
  options.partition = *partition;
  Result<CostFile> file = MeasuredProfileFile(Spans(), 2, options);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ(static_cast<int>(file->layers.size()), options.model.n_layers);
  EXPECT_NEAR(*file->layers[0].forward, 1.0, 1e-9);  // stage 0: the embedding and block 0
  double f = 0, b = 0;
  for (const StageCost& c : file->layers) {
    f += *c.forward;
    b += *c.backward;
  }
  EXPECT_NEAR(f, 3.0, 1e-9);
  EXPECT_NEAR(b, 6.0, 1e-9);
  Result<CostFile> parsed = ParseCostFileJson(FormatCostFileJson(*file), "prof.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->layers.size(), file->layers.size());

  // A partition of another stage count is a mistake of the caller.
  Result<ModelPartition> three = PartitionExplicit(options.model, std::vector<int>{1, 2, 1});
  options.partition = *three;
  EXPECT_EQ(MeasuredProfileFile(Spans(), 2, options).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pw
