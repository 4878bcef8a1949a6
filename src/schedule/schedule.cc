#include "schedule/schedule.h"

namespace pw {

size_t Schedule::NumActions() const {
  size_t n = 0;
  for (const Program& p : programs) n += p.size();
  return n;
}

bool Schedule::UsesSplitBackward() const {
  for (const Program& p : programs) {
    for (const Action& a : p) {
      if (a.kind == ActionKind::kBackwardInput || a.kind == ActionKind::kBackwardWeight) return true;
    }
  }
  return false;
}

std::string Schedule::ActionName(const Action& a) const {
  if (a.kind == ActionKind::kIdle) return "";
  std::string s = std::to_string(a.stage);
  s += kinds.Name(a.kind);
  if (a.microbatch != kNoMicrobatch) s += std::to_string(a.microbatch);
  return s;
}

Schedule MakeEmptySchedule(std::string name, Placement placement, int num_microbatches) {
  Schedule s;
  s.name = std::move(name);
  s.programs.resize(placement.num_ranks());
  s.placement = std::move(placement);
  s.num_microbatches = num_microbatches;
  return s;
}

}  // namespace pw
