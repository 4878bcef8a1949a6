// Schedule: the programs of all ranks plus the placement — the one IR that
// every generator produces, every pass transforms, the simulator predicts
// and the executor runs.
#pragma once

#include <string>
#include <vector>

#include "schedule/action.h"
#include "schedule/kind_registry.h"
#include "schedule/placement.h"

namespace pw {

// One rank's ordered list of actions.
using Program = std::vector<Action>;

struct Schedule {
  std::string name;             // e.g. "1f1b"; informational
  Placement placement;
  int num_microbatches = 0;
  std::vector<Program> programs;  // one per rank, programs[r] runs on rank r
  KindRegistry kinds;           // built-ins plus any user kinds used

  int num_ranks() const { return placement.num_ranks(); }
  int num_stages() const { return placement.num_stages(); }
  size_t NumActions() const;
  // True if any program holds an I or W action.
  bool UsesSplitBackward() const;
  // The text of one action in PyTorch notation, e.g. "2F0", "0REDUCE_GRAD".
  std::string ActionName(const Action& a) const;

  // Programs, placement and microbatch count compare; the name does not.
  friend bool operator==(const Schedule& a, const Schedule& b) {
    return a.placement == b.placement && a.num_microbatches == b.num_microbatches &&
           a.programs == b.programs && a.kinds == b.kinds;
  }
};

// An empty schedule (no actions yet) for `placement` and `m` microbatches.
Schedule MakeEmptySchedule(std::string name, Placement placement, int num_microbatches);

}  // namespace pw
