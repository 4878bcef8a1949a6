#include "schedule/list_scheduler.h"

namespace pw::internal {

Status CheckActionRanges(const Schedule& schedule) {
  const int stages = schedule.num_stages();
  const int m = schedule.num_microbatches;
  if (static_cast<int>(schedule.programs.size()) != schedule.num_ranks()) {
    return Status::InvalidArgument("schedule has " + std::to_string(schedule.programs.size()) +
                                   " programs but its placement has " + std::to_string(schedule.num_ranks()) +
                                   " ranks; give one program per rank");
  }
  if (m < 1) return Status::InvalidArgument("schedule needs at least 1 microbatch, has " + std::to_string(m));
  for (size_t r = 0; r < schedule.programs.size(); ++r) {
    const Program& prog = schedule.programs[r];
    for (size_t i = 0; i < prog.size(); ++i) {
      const Action& a = prog[i];
      auto where = [&] { return "rank " + std::to_string(r) + ", position " + std::to_string(i) + ": "; };
      if (!schedule.kinds.Contains(a.kind)) {
        return Status::InvalidArgument(where() + "action kind id " + std::to_string(static_cast<int>(a.kind)) +
                                       " is not registered; register it in the schedule's kinds first");
      }
      if (a.kind == ActionKind::kIdle) continue;
      if (a.stage < 0 || a.stage >= stages) {
        return Status::InvalidArgument(where() + "action " + schedule.ActionName(a) + " names stage " +
                                       std::to_string(a.stage) + " but the schedule has stages 0.." +
                                       std::to_string(stages - 1));
      }
      const bool needs_mb = schedule.kinds.Info(a.kind).has_microbatch;
      if (needs_mb && (a.microbatch < 0 || a.microbatch >= m)) {
        return Status::InvalidArgument(where() + "action " + schedule.ActionName(a) + " names microbatch " +
                                       std::to_string(a.microbatch) + " but the schedule has microbatches 0.." +
                                       std::to_string(m - 1));
      }
      if (!needs_mb && a.microbatch != kNoMicrobatch) {
        return Status::InvalidArgument(where() + "action " + schedule.ActionName(a) +
                                       " takes no microbatch; write it as " + std::to_string(a.stage) +
                                       std::string(schedule.kinds.Name(a.kind)));
      }
    }
  }
  return Status::Ok();
}

Status DeadlockStatus(const Schedule& schedule, const std::vector<size_t>& pc,
                      const std::vector<Dependency>& waiting_on, const std::vector<char>& is_waiting) {
  std::string msg = "the schedule cannot finish; no rank can make progress:";
  for (size_t r = 0; r < pc.size(); ++r) {
    const Program& prog = schedule.programs[r];
    if (pc[r] >= prog.size()) continue;
    const Action& a = prog[pc[r]];
    msg += "\n  rank " + std::to_string(r) + " is stuck at step " + std::to_string(pc[r]) + " (" +
           schedule.ActionName(a) + ")";
    if (is_waiting[r]) {
      const Dependency& d = waiting_on[r];
      std::string_view uname = d.event == EventType::kUserKindDone ? schedule.kinds.Name(d.user_kind) : "";
      msg += ", waiting for " + DescribeDependency(d, uname);
      if (d.event != EventType::kStageGradsDone) {
        msg += " on rank " + std::to_string(schedule.placement.RankOf(d.stage));
      }
    }
  }
  msg += "\nFix the order so that every action comes after what it needs (or check that no action is missing).";
  return Status::Deadlock(std::move(msg));
}

EventTable::EventTable(const Schedule& schedule, const DependencyRule& rule)
    : cells_(static_cast<size_t>(schedule.num_stages()) * schedule.num_microbatches),
      num_microbatches_(schedule.num_microbatches),
      schedule_(schedule),
      rule_(rule) {
  stage_done_base_ = cells_ * (3 + rule.num_user_kinds());
  const size_t n = stage_done_base_ + schedule.num_stages();
  end_.assign(n, std::numeric_limits<double>::quiet_NaN());
  waiter_head_.assign(n, -1);
  grads_done_.assign(schedule.num_stages(), 0);
}

size_t EventTable::Slot(const Dependency& d) const {
  const size_t cell = static_cast<size_t>(d.stage) * num_microbatches_ + d.microbatch;
  switch (d.event) {
    case EventType::kForwardDone: return cell;
    case EventType::kInputGradDone: return cells_ + cell;
    case EventType::kWeightGradDone: return 2 * cells_ + cell;
    case EventType::kStageGradsDone: return stage_done_base_ + d.stage;
    case EventType::kUserKindDone: return (3 + rule_.UserKindIndex(d.user_kind)) * cells_ + cell;
  }
  PW_CHECK(false, "unknown event type");
  return 0;
}

int EventTable::Produced(const Action& a, size_t out[3]) {
  auto cell = [&] { return static_cast<size_t>(a.stage) * num_microbatches_ + a.microbatch; };
  int n = 0;
  switch (a.kind) {
    case ActionKind::kForward: out[n++] = cell(); break;
    case ActionKind::kBackward: out[n++] = cells_ + cell(); out[n++] = 2 * cells_ + cell(); break;
    case ActionKind::kBackwardInput: out[n++] = cells_ + cell(); break;
    case ActionKind::kBackwardWeight: out[n++] = 2 * cells_ + cell(); break;
    default:
      if (IsUserKind(a.kind) && a.microbatch >= 0) {
        out[n++] = (3 + rule_.UserKindIndex(a.kind)) * cells_ + cell();
      }
      return n;
  }
  if (ProducesWeightGrad(a.kind) && ++grads_done_[a.stage] == num_microbatches_) {
    out[n++] = stage_done_base_ + a.stage;
  }
  return n;
}

}  // namespace pw::internal
