// MeasuredProfileFile: with the model and its partition, the profile
// carries one cost entry per model block whose sums are the stages'.
#include <gtest/gtest.h>

#include "runtime/profile.h"
#include "schedule/kind_registry.h"
#include "sim/cost_model_json.h"

namespace pw {
namespace {

TimelineSpan Span(ActionKind kind, int stage, int microbatch, int64_t step, double ms) {
  TimelineSpan s;
  s.kind = kind;
  s.stage = stage;
  s.microbatch = microbatch;
  s.step = step;
  s.dur_us = 1000.0 * ms;
  return s;
}

// Two stages, one microbatch, two steps; stage s: F (s+1) ms, B 2(s+1) ms.
std::vector<std::vector<TimelineSpan>> Spans() {
  std::vector<std::vector<TimelineSpan>> ranks(2);
  for (int64_t step = 0; step < 2; ++step) {
    for (int s = 0; s < 2; ++s) {
      ranks[s].push_back(Span(ActionKind::kForward, s, 0, step, s + 1.0));
      ranks[s].push_back(Span(ActionKind::kBackward, s, 0, step, 2 * (s + 1.0)));
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

// A run that recomputes some microbatches (as `train --recompute-paired`
// does in every other step): the backwards that follow a RECOMPUTE of the
// same step, stage and microbatch are measured apart, beside the mean
// RECOMPUTE; without the kind they mix with the others, as before.
TEST(MeasuredProfile, MeasuresRecomputationsOwnTimesApart) {
  KindRegistry kinds;
  const ActionKind drop = *kinds.Register(KindInfo{.name = "DROP", .after = {ActionKind::kForward}});
  const ActionKind recompute = *kinds.Register(
      KindInfo{.name = "RECOMPUTE", .after = {drop}, .before = {ActionKind::kBackwardInput}});
  std::vector<std::vector<TimelineSpan>> ranks(1);
  auto& spans = ranks[0];
  for (int64_t step = 0; step < 3; ++step) {  // step 0 is warm-up
    const bool recomputes = step == 1;
    for (int mb = 0; mb < 2; ++mb) spans.push_back(Span(ActionKind::kForward, 0, mb, step, 1.0));
    for (int mb = 0; mb < 2; ++mb) {
      const bool this_one = recomputes && mb == 0;
      if (this_one) spans.push_back(Span(recompute, 0, mb, step, 0.9));
      spans.push_back(Span(ActionKind::kBackwardInput, 0, mb, step, this_one ? 0.8 : 1.0));
      spans.push_back(Span(ActionKind::kBackwardWeight, 0, mb, step, this_one ? 0.7 : 1.0));
    }
  }
  ProfileOptions options;
  options.recompute_kind = recompute;
  Result<CostModel> apart = MeasuredProfile(ranks, 1, options);
  ASSERT_TRUE(apart.ok()) << apart.status().ToString();
  const StageCost& c = apart->stages[0];
  EXPECT_DOUBLE_EQ(*c.backward_input, 1.0);
  EXPECT_DOUBLE_EQ(*c.backward_weight, 1.0);
  EXPECT_DOUBLE_EQ(*c.recompute, 0.9);
  EXPECT_DOUBLE_EQ(*c.backward_input_after_recompute, 0.8);
  EXPECT_DOUBLE_EQ(*c.backward_weight_after_recompute, 0.7);

  Result<CostModel> mixed = MeasuredProfile(ranks, 1, ProfileOptions{});
  ASSERT_TRUE(mixed.ok()) << mixed.status().ToString();
  EXPECT_DOUBLE_EQ(*mixed->stages[0].backward_input, (0.8 + 3 * 1.0) / 4);
  EXPECT_FALSE(mixed->stages[0].recompute.has_value());
  EXPECT_FALSE(mixed->stages[0].HasBackwardAfterRecompute());

  // Every microbatch recomputed: the only backwards measured are the plain times too.
  std::vector<std::vector<TimelineSpan>> all(1);
  for (int64_t step = 0; step < 3; ++step) {
    all[0].push_back(Span(ActionKind::kForward, 0, 0, step, 1.0));
    all[0].push_back(Span(recompute, 0, 0, step, 0.9));
    all[0].push_back(Span(ActionKind::kBackwardInput, 0, 0, step, 0.8));
    all[0].push_back(Span(ActionKind::kBackwardWeight, 0, 0, step, 0.7));
  }
  Result<CostModel> only = MeasuredProfile(all, 1, options);
  ASSERT_TRUE(only.ok()) << only.status().ToString();
  EXPECT_DOUBLE_EQ(*only->stages[0].backward_input, 0.8);
  EXPECT_DOUBLE_EQ(*only->stages[0].backward_weight_after_recompute, 0.7);
}

}  // namespace
}  // namespace pw
