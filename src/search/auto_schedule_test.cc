#include "search/auto_schedule.h"
#include "search/measured_split.h"

#include <gtest/gtest.h>

namespace pw {
namespace {

TEST(AutoScheduleTest, PicksTheShortestSimulatedScheduleAndRanksTheRest) {
  ModelConfig model;  // the tiny default: 4 blocks, heavy embedding/head relative to them
  Result<ScheduleChoice> c = ChooseScheduleBySimulation(model, 2, 4, "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_GE(c->candidates.size(), 4u);
  EXPECT_EQ(c->family, c->candidates.front().family);
  for (size_t i = 1; i < c->candidates.size(); ++i) {
    EXPECT_LE(c->candidates[0].makespan, c->candidates[i].makespan * (1 + 1e-3));
  }
  // A zero-bubble family beats 1F1B's (m + p - 1)(F + B) on this shape.
  EXPECT_NE(c->family, "1f1b");
  EXPECT_NE(c->family, "gpipe");
  EXPECT_NE(c->Describe().find(c->family), std::string::npos);
}

TEST(AutoScheduleTest, FailsClearlyWhenNothingApplies) {
  ModelConfig model;
  model.n_layers = 1;  // 3 units: too few for 64 stages
  Result<ScheduleChoice> c = ChooseScheduleBySimulation(model, 64, 64, "");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("name a schedule"), std::string::npos);
}

}  // namespace
}  // namespace pw

namespace pw {
namespace {

StageCost Times(double f, double b, double i, double w) {
  return {.forward = f, .backward = b, .backward_input = i, .backward_weight = w};
}

TEST(AutoScheduleTest, MeasuredCostsCanOverruleTheEstimate) {
  ModelConfig model;
  Result<ScheduleChoice> analytic = ChooseScheduleBySimulation(model, 2, 4, "");
  ASSERT_TRUE(analytic.ok());
  ASSERT_TRUE(analytic->candidates.front().split_backward) << analytic->family;
  // Measured: splitting the backward costs 50 % more than the fused one
  // (I = W = 1.5 F, B = 2 F), so no zero-bubble family can win.
  search::UnitTimings t{Times(0.01, 0.02, 0.015, 0.015), Times(1, 2, 1.5, 1.5), Times(0.5, 1, 0.75, 0.75)};
  Result<search::ModelProfile> units = search::MeasuredUnitProfile(model, t, 1);
  ASSERT_TRUE(units.ok());
  Result<ScheduleChoice> c = ChooseScheduleByMeasurement(model, 2, 4, "auto", *units);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->measured);
  EXPECT_FALSE(c->candidates.front().split_backward) << c->family;
  EXPECT_EQ(c->SplitBackwardNote(*units), "; split backward costs 1.50x the fused one here: fused " + c->family + " chosen");
  // Where the split is free (I + W = B) there is nothing to say.
  search::UnitTimings even{Times(0.01, 0.02, 0.01, 0.01), Times(1, 2, 1, 1), Times(0.5, 1, 0.5, 0.5)};
  Result<search::ModelProfile> even_units = search::MeasuredUnitProfile(model, even, 1);
  ASSERT_TRUE(even_units.ok());
  EXPECT_EQ(c->SplitBackwardNote(*even_units), "");
  EXPECT_NE(c->family, analytic->family);
  EXPECT_EQ(c->family, c->candidates.front().family);
  EXPECT_EQ(c->layers_per_stage, c->candidates.front().layers_per_stage);
  for (size_t i = 1; i < c->candidates.size(); ++i) {
    EXPECT_LE(c->candidates[0].makespan, c->candidates[i].makespan * 1.03);
    EXPECT_FALSE(c->candidates[i].layers_per_stage.empty());
  }
  EXPECT_NE(c->Describe().find(" s/step (blocks per stage "), std::string::npos) << c->Describe();
  EXPECT_NE(c->Describe().find("runner-up"), std::string::npos);
}

TEST(AutoScheduleTest, MeasuredChoiceKeepsAGivenSplitAndBalancesAFreeOne) {
  ModelConfig model;
  // A head as heavy as the four blocks together.
  search::UnitTimings t{Times(0.01, 0.02, 0.01, 0.01), Times(1, 2, 1, 1), Times(4, 8, 4, 4)};
  Result<search::ModelProfile> units = search::MeasuredUnitProfile(model, t, 1);
  ASSERT_TRUE(units.ok());
  Result<ScheduleChoice> fixed = ChooseScheduleByMeasurement(model, 2, 8, "1,3", *units);
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  for (const auto& cand : fixed->candidates) {
    EXPECT_EQ(cand.num_stages, 2) << cand.family;  // only the two-stage families fit "1,3"
    EXPECT_EQ(cand.layers_per_stage, "1,3");
  }
  Result<ScheduleChoice> free = ChooseScheduleByMeasurement(model, 2, 8, "", *units);
  ASSERT_TRUE(free.ok());
  for (const auto& cand : free->candidates) {
    if (cand.family == "1f1b") {
      EXPECT_EQ(cand.layers_per_stage, "4,0");
    }
  }
  EXPECT_LT(free->candidates.front().makespan, fixed->candidates.front().makespan);
}

TEST(AutoScheduleTest, MeasuredCommunicationFavoursFewerStageBoundaries) {
  ModelConfig model;
  model.n_layers = 8;
  search::UnitTimings t{Times(0.01, 0.02, 0.01, 0.01), Times(1, 2, 1, 1), Times(0.2, 0.4, 0.2, 0.2)};
  Result<search::ModelProfile> units = search::MeasuredUnitProfile(model, t, 1);
  ASSERT_TRUE(units.ok());
  Result<ScheduleChoice> free = ChooseScheduleByMeasurement(model, 2, 8, "", *units);
  ASSERT_TRUE(free.ok());
  EXPECT_EQ(free->candidates.front().num_stages, 4) << free->family;  // a V-shape, without messages
  CostModel slow_link;
  slow_link.comm_latency = 2;  // two block forwards per message
  Result<ScheduleChoice> costly = ChooseScheduleByMeasurement(model, 2, 8, "", *units, slow_link);
  ASSERT_TRUE(costly.ok());
  EXPECT_EQ(costly->candidates.front().num_stages, 2) << costly->family;
}

}  // namespace
}  // namespace pw
