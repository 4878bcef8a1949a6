// SimResultToJson: the numbers of a simulation for machines — what
// `pipewright schedule sim --json` prints. viz/summary.h is the same for
// people.
#pragma once

#include <cstdio>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

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

// Writes the same JSON and a newline to `out` without building the tree
// (SimResultToJson parses this text): keys in dump()'s order, numbers as
// FormatJsonDouble prints them, in 1 MiB writes.
// p = 1024, m = 8192 gives ~46 MB, which the tree took seconds to build and
// print. IoError when `out` cannot be written.
Status WriteSimResultJson(std::FILE* out, const Schedule& schedule, const SimResult& result, const CostModel& costs);

// `v` in nlohmann::json::dump's layout ("27.0", "0.0001", "1e-05",
// "1e+16", "null" when not finite) with the shortest digits that read back
// as v (to_chars; nlohmann's Grisu2 digits are at times longer), written
// into `text`. Pure.
std::string_view FormatJsonDouble(double v, char (&text)[64]);

}  // namespace pw
