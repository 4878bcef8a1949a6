#include "search/auto_schedule.h"

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
