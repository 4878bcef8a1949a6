// What a schedule's bubbles are worth to a side task (`plan
// --side-task-profile`): a task runs in steps of a fixed length, and a step
// only starts when it fits in the bubble it starts in (the `gated` policy,
// docs/harvest.md) with the runtime's margin (sim/step_fit.h: a bubble of
// length b holds floor(b / step - (margin - 1)) steps): bubbles shorter
// than margin x step are worthless, and one long bubble is worth more than
// many short ones of the same total. A bubble whose free memory
// (known under a memory cap) is below the task's memory holds none.
//
// The planner scores each candidate by the side work its bubbles hold and
// by the training time it costs against the fastest schedule found:
//   net = side work (summed over ranks, one task per rank)
//         - ranks x (makespan - fastest makespan),
// both in rank-time per training step. The harvest pick maximises net.
//
// Pure functions; safe to call concurrently.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sim/simulator.h"

namespace pw::search {

struct SideTaskProfile {
  double step = 0;          // length of one task step, in the cost model's time unit (> 0)
  double memory_bytes = 0;  // what the task needs in a bubble (>= 0)
  double margin = 1.2;      // the runtime's step margin (--harvest-step-margin)
};

// {"step": 20, "memory_bytes": 1e8, "margin": 1.2} ("memory_bytes" and "margin" optional). `source_name`
// prefixes errors. InvalidArgument for bad JSON, an unknown key, a step <= 0
// or a negative memory.
Result<SideTaskProfile> ParseSideTaskProfileJson(std::string_view text, std::string_view source_name);
Result<SideTaskProfile> LoadSideTaskProfile(const std::string& path);

struct BubbleWork {
  std::vector<double> per_rank;  // task time the rank's bubbles hold per training step
  double total = 0;              // summed over ranks
  double best_rank = 0;          // the largest per_rank entry
};

// The side work `sim`'s bubbles hold for `task` (sim must have bubbles:
// SimOptions::record_bubbles).
BubbleWork SideWork(const SimResult& sim, const SideTaskProfile& task);

}  // namespace pw::search
