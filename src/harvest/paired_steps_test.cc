// PairedBlockSchedule's arms (the core hash when enabled, always allowed
// when not) and PairedStepLog's slowdown from step ends given by hand.
#include "harvest/paired_steps.h"

#include <gtest/gtest.h>

namespace pw {
namespace {

TEST(PairedBlockScheduleTest, DisabledAllowsEveryStep) {
  const PairedBlockSchedule none;
  EXPECT_FALSE(none.enabled());
  const PairedBlockSchedule zero(0, 7);
  EXPECT_FALSE(zero.enabled());
  for (int64_t step = 0; step < 20; ++step) {
    EXPECT_EQ(none.ArmOf(step), PairedPhase::kAllowed);
    EXPECT_FALSE(zero.Held(step));
  }
}

TEST(PairedBlockScheduleTest, ArmsFollowTheSeededBlocks) {
  const PairedBlockSchedule s(3, 11);
  ASSERT_TRUE(s.enabled());
  EXPECT_EQ(s.block_steps(), 3);
  EXPECT_EQ(s.seed(), 11u);
  for (int64_t step = 0; step < 60; ++step) {
    EXPECT_EQ(s.ArmOf(step), PairedPhaseOf(step, 3, 11)) << "step " << step;
    EXPECT_EQ(s.Held(step), PairedPhaseOf(step, 3, 11) == PairedPhase::kHeld);
  }
  EXPECT_EQ(s.ArmOf(-4), s.ArmOf(0));  // before the first step: step 0's arm
}

// Step ends one second apart for held steps, 1 + extra for allowed ones.
PairedStepLog Timed(const PairedBlockSchedule& schedule, int64_t steps, double extra) {
  PairedStepLog log(schedule, steps);
  double t = 0;
  for (int64_t step = 0; step <= steps; ++step) {
    t += schedule.Held(step) ? 1.0 : 1.0 + extra;
    EXPECT_TRUE(log.RecordStepEnd(step, t));
  }
  return log;
}

TEST(PairedStepLogTest, SlowdownOverCompletePairsFromTheMarkedStep) {
  const PairedBlockSchedule schedule(2, 5);
  PairedStepLog log = Timed(schedule, 40, 0.25);
  // No pair counts before MarkFrom.
  ASSERT_TRUE(log.Slowdown().has_value());
  EXPECT_EQ(log.Slowdown()->pairs, 0);
  EXPECT_EQ(log.from_step(), -1);
  log.MarkFrom(3);
  log.MarkFrom(0);  // the first call wins
  EXPECT_EQ(log.from_step(), 3);
  const PairedSlowdown s = *log.Slowdown();
  // Pairs start at multiples of 4 from step 4; steps 4 .. 39 are 9 pairs
  // (step 40's pair is incomplete).
  EXPECT_EQ(s.block_steps, 2);
  EXPECT_EQ(s.first_step, 4);
  EXPECT_EQ(s.pairs, 9);
  EXPECT_NEAR(s.slowdown, 0.25, 1e-9);
  EXPECT_NEAR(s.ci95_low, 0.25, 1e-9);
  EXPECT_NEAR(s.ci95_high, 0.25, 1e-9);
  EXPECT_NEAR(s.held_step_ms, 1000, 1e-6);
  EXPECT_NEAR(s.allowed_step_ms, 1250, 1e-6);
}

TEST(PairedStepLogTest, AMissingStepEndDropsItsPairs) {
  const PairedBlockSchedule schedule(2, 5);
  PairedStepLog full = Timed(schedule, 16, 0.5);
  full.MarkFrom(0);
  // Step 0's time is unknown (no end before it), so pair 0 never counts.
  EXPECT_EQ(full.Slowdown()->pairs, 3);
  PairedStepLog gap(schedule, 16);
  double t = 0;
  for (int64_t step = 0; step <= 16; ++step) {
    t += 1;
    if (step != 9) gap.RecordStepEnd(step, t);  // steps 9 and 10 unknown: pair 2 drops
  }
  gap.MarkFrom(0);
  EXPECT_EQ(gap.Slowdown()->pairs, 2);
  EXPECT_NEAR(gap.Slowdown()->slowdown, 0, 1e-9);
}

TEST(PairedStepLogTest, RecordsOnlyInsideTheRunWhenEnabled) {
  PairedStepLog log(PairedBlockSchedule(2, 1), 4);
  EXPECT_FALSE(log.RecordStepEnd(-1, 1.0));
  EXPECT_TRUE(log.RecordStepEnd(4, 1.0));
  EXPECT_FALSE(log.RecordStepEnd(5, 1.0));
  PairedStepLog off(PairedBlockSchedule(), 4);
  EXPECT_FALSE(off.RecordStepEnd(0, 1.0));
  off.MarkFrom(0);
  EXPECT_EQ(off.from_step(), -1);
  EXPECT_FALSE(off.Slowdown().has_value());
  EXPECT_FALSE(PairedStepLog().Slowdown().has_value());
}

}  // namespace
}  // namespace pw
