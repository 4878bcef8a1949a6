#include "schedule/lowering.h"

#include <string>
#include <vector>

#include "schedule/action_text.h"
#include "schedule/list_scheduler.h"

namespace pw {
namespace {

std::string Position(size_t rank, size_t index) {
  return "rank " + std::to_string(rank) + ", position " + std::to_string(index);
}

// The first action of `schedule` for which `pred` holds, as a message
// fragment, or "" if none does.
template <class Pred>
std::string FirstWhere(const Schedule& schedule, Pred pred) {
  for (size_t r = 0; r < schedule.programs.size(); ++r) {
    const Program& p = schedule.programs[r];
    for (size_t i = 0; i < p.size(); ++i) {
      if (pred(p[i])) return FormatAction(p[i], schedule.kinds) + " at " + Position(r, i);
    }
  }
  return "";
}

Schedule WithPrograms(const Schedule& schedule, std::vector<Program> programs) {
  Schedule out = MakeEmptySchedule(schedule.name, schedule.placement, schedule.num_microbatches);
  out.kinds = schedule.kinds;
  out.programs = std::move(programs);
  return out;
}

}  // namespace

Result<Schedule> InsertCommunication(const Schedule& schedule) {
  PW_RETURN_IF_ERROR(internal::CheckActionRanges(schedule));
  const std::string existing = FirstWhere(schedule, [](const Action& a) { return IsCommunication(a.kind); });
  if (!existing.empty()) {
    return Status::FailedPrecondition("the schedule already has communication actions (first: " + existing +
                                      "); InsertCommunication runs once on a schedule without them: apply "
                                      "StripToCompute first to redo it");
  }
  const Placement& placement = schedule.placement;
  const StageId last = schedule.num_stages() - 1;
  // True when stage `s` and its neighbour `t` live on different ranks.
  auto crosses = [&](StageId s, StageId t) {
    return t >= 0 && t <= last && placement.RankOf(s) != placement.RankOf(t);
  };
  std::vector<Program> programs(schedule.programs.size());
  for (size_t r = 0; r < schedule.programs.size(); ++r) {
    Program& out = programs[r];
    out.reserve(schedule.programs[r].size() * 2);
    for (const Action& a : schedule.programs[r]) {
      const StageId s = a.stage;
      const MicrobatchId mb = a.microbatch;
      if (a.kind == ActionKind::kForward) {
        if (crosses(s, s - 1)) out.push_back({s, mb, ActionKind::kRecvForward});
        out.push_back(a);
        if (crosses(s, s + 1)) out.push_back({s, mb, ActionKind::kSendForward});
      } else if (ProducesInputGrad(a.kind)) {
        if (crosses(s, s + 1)) out.push_back({s, mb, ActionKind::kRecvBackward});
        out.push_back(a);
        if (crosses(s, s - 1)) out.push_back({s, mb, ActionKind::kSendBackward});
      } else {
        out.push_back(a);
      }
    }
  }
  return WithPrograms(schedule, std::move(programs));
}

Schedule MergeInputWeight(const Schedule& schedule) {
  std::vector<Program> programs(schedule.programs.size());
  for (size_t r = 0; r < schedule.programs.size(); ++r) {
    const Program& in = schedule.programs[r];
    std::vector<char> dropped(in.size(), 0);
    Program& out = programs[r];
    out.reserve(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (dropped[i]) continue;
      Action a = in[i];
      if (a.kind == ActionKind::kBackwardInput) {
        // Look past what may sit between an I and its W without changing
        // what the W would have waited for.
        size_t j = i + 1;
        while (j < in.size() &&
               (in[j].kind == ActionKind::kIdle ||
                (in[j].kind == ActionKind::kSendBackward && in[j].stage == a.stage &&
                 in[j].microbatch == a.microbatch))) {
          ++j;
        }
        if (j < in.size() && in[j] == Action{a.stage, a.microbatch, ActionKind::kBackwardWeight}) {
          a.kind = ActionKind::kBackward;
          dropped[j] = 1;
        }
      }
      out.push_back(a);
    }
  }
  return WithPrograms(schedule, std::move(programs));
}

Result<Schedule> AddGradientSync(const Schedule& schedule) {
  PW_RETURN_IF_ERROR(internal::CheckActionRanges(schedule));
  const std::string existing = FirstWhere(schedule, [](const Action& a) {
    return a.kind == ActionKind::kReduceGrad || a.kind == ActionKind::kOptimizer;
  });
  if (!existing.empty()) {
    return Status::FailedPrecondition("the schedule already has gradient sync (first: " + existing +
                                      "); AddGradientSync runs once: apply StripToCompute first to redo it");
  }
  const Placement& placement = schedule.placement;
  std::vector<Program> programs(schedule.programs.size());
  for (size_t r = 0; r < schedule.programs.size(); ++r) {
    const Program& in = schedule.programs[r];
    const std::vector<StageId>& stages = placement.StagesOf(static_cast<RankId>(r));
    // reduce_after[i]: stages whose REDUCE_GRAD goes right after in[i].
    std::vector<std::vector<StageId>> reduce_after(in.size());
    for (StageId s : stages) {
      size_t anchor = in.size();
      for (size_t i = in.size(); i-- > 0;) {
        if (in[i].stage == s && ProducesWeightGrad(in[i].kind)) {
          anchor = i;
          break;
        }
      }
      if (anchor == in.size()) {
        return Status::FailedPrecondition(
            "stage " + std::to_string(s) + " has no B or W on its rank " + std::to_string(r) +
            ", so there is no gradient to sync; AddGradientSync needs a training schedule (with backward)");
      }
      // Let the gradient leave for the previous stage before the reduction.
      const Action& wg = in[anchor];
      if (anchor + 1 < in.size() && in[anchor + 1] == Action{s, wg.microbatch, ActionKind::kSendBackward}) {
        ++anchor;
      }
      reduce_after[anchor].push_back(s);
    }
    Program& out = programs[r];
    out.reserve(in.size() + 2 * stages.size());
    for (size_t i = 0; i < in.size(); ++i) {
      out.push_back(in[i]);
      for (StageId s : reduce_after[i]) out.push_back({s, kNoMicrobatch, ActionKind::kReduceGrad});
    }
    for (StageId s : stages) out.push_back({s, kNoMicrobatch, ActionKind::kOptimizer});
  }
  return WithPrograms(schedule, std::move(programs));
}

namespace {

Schedule KeepOnly(const Schedule& schedule, bool user_kinds) {
  std::vector<Program> programs(schedule.programs.size());
  for (size_t r = 0; r < schedule.programs.size(); ++r) {
    for (const Action& a : schedule.programs[r]) {
      if (IsCompute(a.kind) || a.kind == ActionKind::kIdle || (user_kinds && IsUserKind(a.kind))) {
        programs[r].push_back(a);
      }
    }
  }
  return WithPrograms(schedule, std::move(programs));
}

}  // namespace

Schedule StripToCompute(const Schedule& schedule) { return KeepOnly(schedule, /*user_kinds=*/false); }

Schedule StripCommunication(const Schedule& schedule) { return KeepOnly(schedule, /*user_kinds=*/true); }

Result<Schedule> LowerForTraining(const Schedule& compute) {
  PW_ASSIGN_OR_RETURN(Schedule synced, AddGradientSync(StripCommunication(compute)));
  return InsertCommunication(synced);
}

}  // namespace pw
