// The validator's dry run: can every rank run its whole program?
//
// DryRun runs the programs through ListSchedule (schedule/list_scheduler.h)
// with unit costs: which actions can run does not depend on durations, so it
// stops exactly where any simulation of the schedule would deadlock.
//
// DiagnoseDeadlock explains a stop: which action each rank is stuck at, what
// it waits for and where that is, and the wait-for cycle among ranks ("rank
// 0's 0B0 waits for rank 1's 1B0, which comes after 1F1; 1F1 waits for rank
// 0's 0F1, which comes after 0B0"), with a suggestion to break it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "schedule/dependencies.h"
#include "schedule/schedule.h"
#include "schedule/step_grid.h"

namespace pw {

struct DeadlockDiagnosis {
  // "deadlock: ...": stuck ranks, the cycle, how to break it. Several lines.
  std::string message;
  // The stuck action to mark: the first of the cycle (lowest rank), else the
  // lowest stuck rank's.
  std::optional<GridCell> cell;
  // Other actions of the cycle, stuck and awaited, for the grid.
  std::vector<GridCell> related;
};

// Returns, per rank, how many actions of its program ran (a prefix): the
// whole program for every rank unless the schedule deadlocks. Requires every
// action in range and on the rank that owns its stage (the validator's checks
// 1-3); PW_CHECKs the shape. Pure; O(actions) time, O(stages x microbatches) memory.
std::vector<size_t> DryRun(const Schedule& schedule);

// `ran[r]` is how many actions of rank r's program ran (a prefix) before the
// run stopped. The schedule must have passed the validator's static checks
// (ranges, placement, coverage), so that every awaited event has a producer
// on its stage's owner. Pure; O(actions) time, O(stages x microbatches) memory.
DeadlockDiagnosis DiagnoseDeadlock(const Schedule& schedule, const std::vector<size_t>& ran);

// True if action `a` produces the event that `d` waits for (for a stage-wide
// event: any of the stage's weight-gradient actions).
bool ProducesEvent(const Action& a, const Dependency& d);

}  // namespace pw
