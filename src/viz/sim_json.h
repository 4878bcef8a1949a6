// SimResultToJson: the numbers of a simulation for machines — what
// `pipewright schedule sim --json` prints. viz/summary.h is the same for
// people.
#pragma once

#include <nlohmann/json.hpp>

#include "schedule/schedule.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"

namespace pw {

// Returns
//   {"schedule": name, "placement": "sequential"|..., "num_ranks", "num_stages",
//    "num_microbatches", "num_actions", "makespan", "bubble_ratio",
//    "memory_cap": bytes or null, "memory_cap_violated",
//    "ranks": [{"rank", "busy", "idle", "peak_memory", "memory_cap_violated",
//               "bubbles": [[start, end], ...],
//               "bubble_memory": [{"start", "end", "memory_used",
//                                  "free_memory": bytes or null}, ...]}, ...]}
// Times are in cost-model units, memory in bytes. Pure. `result` must come
// from Simulate(schedule, costs, ...) (PW_CHECK on the rank count); spans
// are not needed.
nlohmann::json SimResultToJson(const Schedule& schedule, const SimResult& result, const CostModel& costs);

}  // namespace pw
