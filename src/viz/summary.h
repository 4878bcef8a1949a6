// RenderSimSummary: the numbers of a simulation for people — a few lines
// and a per-rank table for a terminal. viz/sim_json.h is the same for
// machines.
#pragma once

#include <string>

#include "schedule/schedule.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"

namespace pw {

// Returns a few lines for a terminal:
//   1f1b: 2 ranks, 2 stages (sequential), 2 microbatches, 8 actions
//   makespan 9, bubble ratio 33.3%
//   rank  busy  idle %  peak memory  bubbles
//      0     6   33.3%        0 B          2
// plus the memory cap and the ranks over it when a cap is set. Pure; `result`
// must come from Simulate(schedule, costs, ...) (PW_CHECK on the rank count).
std::string RenderSimSummary(const Schedule& schedule, const SimResult& result, const CostModel& costs);

}  // namespace pw
