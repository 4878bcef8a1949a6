#include "harvest/supervisor.h"

namespace pw {

Result<HarvestPolicy> ParseHarvestPolicy(const std::string& text) {
  if (text == "none") return HarvestPolicy::kNone;
  if (text == "idle") return HarvestPolicy::kIdle;
  if (text == "gated") return HarvestPolicy::kGated;
  return Status::InvalidArgument("--harvest-policy '" + text + "': use none, idle or gated");
}

const char* HarvestPolicyName(HarvestPolicy policy) {
  switch (policy) {
    case HarvestPolicy::kNone: return "none";
    case HarvestPolicy::kIdle: return "idle";
    case HarvestPolicy::kGated: return "gated";
  }
  return "?";
}

SideTaskSupervisor::SideTaskSupervisor(HarvestPolicy policy, PairedBlockSchedule paired, size_t tasks)
    : policy_(policy), paired_(paired), tasks_(tasks), paused_by_block_(tasks, 0) {}

void SideTaskSupervisor::OnIdle(int64_t step, const std::vector<char>& started, bool all_attempted,
                                std::optional<double> budget_us, std::vector<TaskOrder>& orders) {
  orders.clear();
  if (step != step_) {
    step_ = step;
    if (ready_step_ < 0 && tasks_ > 0 && all_attempted) ready_step_ = step;
    held_ = paired_.Held(step);
    if (counted_from_step_ < 0 && costs_measured_ && (tasks_ == 0 || all_attempted)) counted_from_step_ = step;
  }
  // Every edge, not only a step's first: a task may have started since.
  ApplyBlock(held_, started, orders);
  resumed_ = false;
  if (policy_ != HarvestPolicy::kGated || held_ || !budget_us) return;
  for (size_t i = 0; i < tasks_; ++i) {
    if (started[i] == 0) continue;
    orders.push_back({i, TaskOrder::Kind::kResume, *budget_us});
    resumed_ = true;
  }
}

void SideTaskSupervisor::OnBusy(bool step_ended, const std::vector<char>& started,
                                std::vector<TaskOrder>& orders) {
  orders.clear();
  if (resumed_) {
    for (size_t i = 0; i < tasks_; ++i) {
      if (started[i] != 0) orders.push_back({i, TaskOrder::Kind::kPause, 0});
    }
  }
  if (step_ended) ApplyBlock(paired_.Held(step_ + 1), started, orders);
}

void SideTaskSupervisor::ApplyBlock(bool hold, const std::vector<char>& started,
                                    std::vector<TaskOrder>& orders) {
  if (policy_ != HarvestPolicy::kIdle || !paired_.enabled()) return;
  for (size_t i = 0; i < tasks_; ++i) {
    if (started[i] == 0 || (paused_by_block_[i] != 0) == hold) continue;
    orders.push_back({i, hold ? TaskOrder::Kind::kPause : TaskOrder::Kind::kResume, 0});
    paused_by_block_[i] = hold ? 1 : 0;
  }
}

}  // namespace pw
