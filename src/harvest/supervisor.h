// SideTaskSupervisor: when the rank's side tasks run, decided from the
// executor's edges, the policy and the paired blocks.
//
//   none   no task runs (the manager starts none).
//   idle   the tasks run freely at idle priority and the OS schedules them;
//          only paired blocks gate them: as a held block starts each
//          started task is paused, as an allowed one starts it is resumed
//          with no budget (until paused). A block starts at the end of the
//          step before it, or at the step's first idle edge.
//   gated  the tasks start paused. An idle edge resumes every started task
//          with the bubble's budget (BubbleEdgePredictor's; none when the
//          bubble is too short or the costs are not measured yet) unless
//          the step is held; the busy edge that ends such a bubble pauses
//          them again.
//
// It also marks the steps the report needs: the first step begun with every
// task's start attempted (ready_step), and the first step begun with the
// costs measured and the tasks ready, from which the paired measurement
// counts (counted_from_step).
//
// Pure: no clock, no threads, no processes. The caller says which tasks
// have started and applies the orders; orders go into a vector the caller
// owns, cleared first, so with its capacity reserved to the task count the
// training thread never allocates here. Thread-safety: one thread (the
// manager's training thread) drives a supervisor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "harvest/paired_steps.h"

namespace pw {

enum class HarvestPolicy { kNone, kIdle, kGated };
// "none", "idle" or "gated"; InvalidArgument naming the choices otherwise.
Result<HarvestPolicy> ParseHarvestPolicy(const std::string& text);
const char* HarvestPolicyName(HarvestPolicy policy);

// One order for one side task.
struct TaskOrder {
  enum class Kind { kResume, kPause };
  size_t task = 0;        // index into the rank's tasks
  Kind kind = Kind::kPause;
  double budget_us = 0;   // kResume: the bubble's budget; 0: until paused
};

class SideTaskSupervisor {
 public:
  // No tasks: never orders anything.
  SideTaskSupervisor() = default;
  // `tasks`: how many side tasks the rank hosts.
  SideTaskSupervisor(HarvestPolicy policy, PairedBlockSchedule paired, size_t tasks);

  // The costs are measured: from the next step the paired measurement may
  // count.
  void OnCostsMeasured() { costs_measured_ = true; }
  // The rank goes idle in `step`. `started[i]` (one per task): task i is
  // running; `all_attempted`: every task's start has finished, ok or not;
  // `budget_us`: the bubble's budget (gated; nullopt: do not resume).
  // Fills `orders`.
  void OnIdle(int64_t step, const std::vector<char>& started, bool all_attempted,
              std::optional<double> budget_us, std::vector<TaskOrder>& orders);
  // The rank computes again. `step_ended`: that bubble was the step's last
  // (the next step's block starts now). Fills `orders`.
  void OnBusy(bool step_ended, const std::vector<char>& started, std::vector<TaskOrder>& orders);

  // The step of the last idle edge (-1 before the first).
  int64_t step() const { return step_; }
  // The current step is in a held block.
  bool held() const { return held_; }
  // Gated: the current (or last) bubble resumed the tasks.
  bool resumed() const { return resumed_; }
  // -1 until such a step began (see the header).
  int64_t ready_step() const { return ready_step_; }
  int64_t counted_from_step() const { return counted_from_step_; }

 private:
  // Idle policy with paired blocks: brings each started task to `hold`.
  void ApplyBlock(bool hold, const std::vector<char>& started, std::vector<TaskOrder>& orders);

  HarvestPolicy policy_ = HarvestPolicy::kNone;
  PairedBlockSchedule paired_;
  size_t tasks_ = 0;
  std::vector<char> paused_by_block_;  // per task (idle policy)
  bool costs_measured_ = false, held_ = false, resumed_ = false;
  int64_t step_ = -1, ready_step_ = -1, counted_from_step_ = -1;
};

}  // namespace pw
