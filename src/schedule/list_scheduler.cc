#include "schedule/list_scheduler.h"

#include <algorithm>

namespace pw::internal {

ActionRanges::ActionRanges(const Schedule& schedule)
    : num_stages_(schedule.num_stages()), owner_(schedule.placement.stage_to_rank().data()) {
  idle_known_ = schedule.kinds.Contains(ActionKind::kIdle);
  for (int k = 0; k < kMaxKinds; ++k) {
    const ActionKind kind = static_cast<ActionKind>(k);
    if (!schedule.kinds.Contains(kind)) continue;  // count 0: nothing fits
    const bool has_mb = schedule.kinds.Info(kind).has_microbatch;
    mb_first_[k] = has_mb ? 0 : kNoMicrobatch;
    mb_count_[k] = has_mb ? static_cast<uint64_t>(std::max(0, schedule.num_microbatches)) : 1;
  }
}

Status CheckScheduleShape(const Schedule& schedule) {
  if (static_cast<int>(schedule.programs.size()) != schedule.num_ranks()) {
    return Status::InvalidArgument("schedule has " + std::to_string(schedule.programs.size()) +
                                   " programs but its placement has " + std::to_string(schedule.num_ranks()) +
                                   " ranks; give one program per rank");
  }
  const int m = schedule.num_microbatches;
  if (m < 1) return Status::InvalidArgument("schedule needs at least 1 microbatch, has " + std::to_string(m));
  return Status::Ok();
}

Status CheckActionRanges(const Schedule& schedule) {
  PW_RETURN_IF_ERROR(CheckScheduleShape(schedule));
  const int stages = schedule.num_stages();
  const int m = schedule.num_microbatches;
  const ActionRanges ranges(schedule);
  for (size_t r = 0; r < schedule.programs.size(); ++r) {
    const Program& prog = schedule.programs[r];
    for (size_t i = 0; i < prog.size(); ++i) {
      const Action& a = prog[i];
      if (ranges.Runnable(a, static_cast<RankId>(r))) continue;  // the checks below say what is wrong
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
      if (schedule.placement.RankOf(a.stage) != static_cast<RankId>(r)) {
        return Status::InvalidArgument(where() + "action " + schedule.ActionName(a) + " belongs to stage " +
                                       std::to_string(a.stage) + ", which the placement puts on rank " +
                                       std::to_string(schedule.placement.RankOf(a.stage)) +
                                       "; move it to that rank's program");
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
    : num_microbatches_(schedule.num_microbatches), rule_(rule) {
  // Smallest stride >= stages with stride % 8 == 4: rows of 16-byte times
  // then start an odd number of cache lines apart.
  row_stride_ = static_cast<size_t>(schedule.num_stages());
  while (row_stride_ % 8 != 4) ++row_stride_;
  const size_t cells = static_cast<size_t>(schedule.num_microbatches) * row_stride_;
  time_.reset(new double[2 * cells]);
  happened_.assign(cells, 0);
  user_.assign(rule.num_user_kinds(), {});
  grads_done_.assign(schedule.num_stages(), 0);
}

bool EventTable::HappenedOther(const Dependency& d) const {
  switch (d.event) {
    case EventType::kStageGradsDone: return grads_done_[d.stage] >= num_microbatches_;
    case EventType::kUserKindDone: {
      const std::vector<uint8_t>& bits = user_[rule_.UserKindIndex(d.user_kind)];
      return !bits.empty() && bits[Cell(d.stage, d.microbatch)];
    }
    default: return Happened(d);
  }
}

void EventTable::RecordOther(const Action& a) {
  if (IsUserKind(a.kind) && a.microbatch >= 0) {
    std::vector<uint8_t>& bits = user_[rule_.UserKindIndex(a.kind)];
    if (bits.empty()) bits.assign(happened_.size(), 0);
    bits[Cell(a.stage, a.microbatch)] = 1;
  }
}

}  // namespace pw::internal
