// The training step a plan predicts: the compute makespan plus what the
// lowered schedule adds (the optimizer step, link latency), by hand on
// 1F1B over 2 ranks.
#include "search/step_prediction.h"

#include <gtest/gtest.h>

#include "schedule/generators.h"
#include "sim/simulator.h"

namespace pw::search {
namespace {

struct Case {
  Schedule schedule;
  CostModel costs;
  double makespan = 0;
};

Case OneFOneB() {
  Case c;
  c.schedule = *GenerateSchedule("1f1b", GeneratorOptions{2, 4, 1});
  EXPECT_TRUE(c.costs.ParseUniformCosts("F=1,B=2").ok());
  CostModel resolved = c.costs;
  EXPECT_TRUE(resolved.Resolve(c.schedule).ok());
  c.makespan = Simulate(c.schedule, resolved)->makespan;
  return c;
}

TEST(StepPredictionTest, FreeCommunicationAndOptimizerLeaveTheMakespan) {
  Case c = OneFOneB();
  Result<double> step = PredictTrainingStep(c.schedule, c.costs);
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_DOUBLE_EQ(*step, c.makespan);
}

TEST(StepPredictionTest, TheOptimizerStepComesAfterTheLastBackward) {
  Case c = OneFOneB();
  c.costs.kind_costs["OPT"] = 5;
  // Rank 0 runs the last backward, at the makespan; its OPT follows.
  EXPECT_DOUBLE_EQ(*PredictTrainingStep(c.schedule, c.costs), c.makespan + 5);
}

TEST(StepPredictionTest, LinkLatencyLengthensTheStep) {
  Case c = OneFOneB();
  c.costs.comm_latency = 0.5;
  Result<double> step = PredictTrainingStep(c.schedule, c.costs);
  ASSERT_TRUE(step.ok());
  EXPECT_GT(*step, c.makespan);
}

// A forward-only schedule has no gradient sync: an error, not a step.
TEST(StepPredictionTest, AForwardOnlyScheduleHasNoTrainingStep) {
  Case c = OneFOneB();
  Schedule forward_only = c.schedule;
  for (Program& program : forward_only.programs) {
    Program kept;
    for (const Action& a : program) {
      if (a.kind == ActionKind::kForward) kept.push_back(a);
    }
    program = kept;
  }
  EXPECT_FALSE(PredictTrainingStep(forward_only, c.costs).ok());
}

}  // namespace
}  // namespace pw::search
