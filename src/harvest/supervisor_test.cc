// SideTaskSupervisor's orders for edges given by hand: gated resumes with
// the budget and pauses on busy, held blocks hold, the idle policy is gated
// only by blocks, and the report's steps are marked when they should be.
#include "harvest/supervisor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pw {
namespace {

// "r0:1500 p1" for resume task 0 with 1500 µs, pause task 1.
std::string Text(const std::vector<TaskOrder>& orders) {
  std::string out;
  for (const TaskOrder& o : orders) {
    if (!out.empty()) out += ' ';
    out += (o.kind == TaskOrder::Kind::kResume ? "r" : "p") + std::to_string(o.task);
    if (o.kind == TaskOrder::Kind::kResume) out += ":" + std::to_string(static_cast<int>(o.budget_us));
  }
  return out;
}

TEST(SideTaskSupervisorTest, GatedResumesStartedTasksWithTheBudgetAndPausesOnBusy) {
  SideTaskSupervisor s(HarvestPolicy::kGated, PairedBlockSchedule(), 2);
  std::vector<TaskOrder> orders;
  const std::vector<char> one = {1, 0}, both = {1, 1};
  s.OnIdle(0, one, false, 1500, orders);
  EXPECT_EQ(Text(orders), "r0:1500");
  EXPECT_TRUE(s.resumed());
  s.OnBusy(false, one, orders);
  EXPECT_EQ(Text(orders), "p0");
  // No budget (too short, or costs not measured): nothing runs, nothing to pause.
  s.OnIdle(0, both, true, std::nullopt, orders);
  EXPECT_EQ(Text(orders), "");
  EXPECT_FALSE(s.resumed());
  s.OnBusy(true, both, orders);
  EXPECT_EQ(Text(orders), "");
  s.OnIdle(1, both, true, 800, orders);
  EXPECT_EQ(Text(orders), "r0:800 r1:800");
  s.OnBusy(true, both, orders);
  EXPECT_EQ(Text(orders), "p0 p1");
  // Nothing started yet: nothing resumed.
  SideTaskSupervisor waiting(HarvestPolicy::kGated, PairedBlockSchedule(), 1);
  waiting.OnIdle(0, {0}, false, 900, orders);
  EXPECT_EQ(Text(orders), "");
  EXPECT_FALSE(waiting.resumed());
}

TEST(SideTaskSupervisorTest, GatedHeldBlocksNeverResume) {
  const PairedBlockSchedule blocks(2, 5);
  SideTaskSupervisor s(HarvestPolicy::kGated, blocks, 1);
  std::vector<TaskOrder> orders;
  for (int64_t step = 0; step < 24; ++step) {
    s.OnIdle(step, {1}, true, 1000, orders);
    EXPECT_EQ(s.held(), blocks.Held(step));
    EXPECT_EQ(Text(orders), blocks.Held(step) ? "" : "r0:1000") << "step " << step;
    s.OnBusy(true, {1}, orders);
    EXPECT_EQ(Text(orders), blocks.Held(step) ? "" : "p0") << "step " << step;
  }
}

TEST(SideTaskSupervisorTest, IdlePolicyIsGatedOnlyByBlocks) {
  std::vector<TaskOrder> orders;
  SideTaskSupervisor free(HarvestPolicy::kIdle, PairedBlockSchedule(), 1);
  for (int64_t step = 0; step < 8; ++step) {
    free.OnIdle(step, {1}, true, 1000, orders);  // a budget does not matter
    EXPECT_EQ(Text(orders), "");
    free.OnBusy(true, {1}, orders);
    EXPECT_EQ(Text(orders), "");
  }
  const PairedBlockSchedule blocks(2, 5);
  SideTaskSupervisor s(HarvestPolicy::kIdle, blocks, 2);
  // Task 1 starts in step 3; a block's change shows at the end of the step
  // before it (or, for a task started since, at the next idle edge).
  bool paused0 = false, paused1 = false;
  for (int64_t step = 0; step < 24; ++step) {
    const std::vector<char> started = {1, static_cast<char>(step >= 3 ? 1 : 0)};
    s.OnIdle(step, started, step >= 3, std::nullopt, orders);
    std::string want;
    auto expect = [&](bool& paused, int task, bool hold) {
      if (paused == hold) return;
      want += (want.empty() ? "" : " ") + std::string(hold ? "p" : "r") + std::to_string(task) + (hold ? "" : ":0");
      paused = hold;
    };
    expect(paused0, 0, blocks.Held(step));
    if (step >= 3) expect(paused1, 1, blocks.Held(step));
    EXPECT_EQ(Text(orders), want) << "idle, step " << step;
    s.OnBusy(false, started, orders);  // a bubble inside the step: no change
    EXPECT_EQ(Text(orders), "");
    s.OnIdle(step, started, step >= 3, std::nullopt, orders);
    EXPECT_EQ(Text(orders), "");
    s.OnBusy(true, started, orders);
    want.clear();
    expect(paused0, 0, blocks.Held(step + 1));
    if (step >= 3) expect(paused1, 1, blocks.Held(step + 1));
    EXPECT_EQ(Text(orders), want) << "end of step " << step;
  }
}

TEST(SideTaskSupervisorTest, MarksTheReadyAndCountedSteps) {
  std::vector<TaskOrder> orders;
  SideTaskSupervisor s(HarvestPolicy::kGated, PairedBlockSchedule(2, 1), 1);
  s.OnIdle(0, {0}, false, std::nullopt, orders);
  EXPECT_EQ(s.ready_step(), -1);
  s.OnIdle(1, {1}, true, std::nullopt, orders);  // ready, costs not measured
  EXPECT_EQ(s.ready_step(), 1);
  EXPECT_EQ(s.counted_from_step(), -1);
  s.OnCostsMeasured();
  s.OnIdle(1, {1}, true, std::nullopt, orders);  // the same step: marks nothing
  EXPECT_EQ(s.counted_from_step(), -1);
  s.OnIdle(2, {1}, true, std::nullopt, orders);
  EXPECT_EQ(s.counted_from_step(), 2);
  EXPECT_EQ(s.step(), 2);
  s.OnIdle(3, {1}, true, std::nullopt, orders);
  EXPECT_EQ(s.ready_step(), 1);
  EXPECT_EQ(s.counted_from_step(), 2);
  // A rank without tasks is never "ready" but counts once the costs are measured.
  SideTaskSupervisor bare(HarvestPolicy::kGated, PairedBlockSchedule(2, 1), 0);
  bare.OnCostsMeasured();
  bare.OnIdle(4, {}, false, 1000, orders);
  EXPECT_EQ(Text(orders), "");
  EXPECT_EQ(bare.ready_step(), -1);
  EXPECT_EQ(bare.counted_from_step(), 4);
}

TEST(SideTaskSupervisorTest, ParsePolicy) {
  EXPECT_EQ(*ParseHarvestPolicy("gated"), HarvestPolicy::kGated);
  EXPECT_EQ(*ParseHarvestPolicy("idle"), HarvestPolicy::kIdle);
  EXPECT_EQ(*ParseHarvestPolicy("none"), HarvestPolicy::kNone);
  EXPECT_STREQ(HarvestPolicyName(HarvestPolicy::kIdle), "idle");
  Result<HarvestPolicy> bad = ParseHarvestPolicy("greedy");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("none, idle or gated"), std::string::npos);
}

}  // namespace
}  // namespace pw
