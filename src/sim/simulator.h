// Simulate: predicts time, memory and bubbles of a schedule under a cost
// model, with the default semantics of docs/cost-model.md "Semantics" (list
// scheduling in program order; see schedule/list_scheduler.h).
#pragma once

#include <optional>
#include <vector>

#include "core/status.h"
#include "schedule/schedule.h"
#include "sim/cost_model.h"

namespace pw {

// An idle interval of one rank within [0, makespan].
struct Bubble {
  double start = 0, end = 0;
  double memory_used = 0;                 // bytes held during the bubble
  std::optional<double> free_memory;      // cap - memory_used, when a cap is set
  double length() const { return end - start; }
};

struct ActionSpan {
  double start = 0, end = 0;
};

struct RankSimResult {
  double busy = 0;               // sum of action durations
  double peak_memory = 0;        // static + peak activations, bytes
  bool memory_cap_violated = false;
  std::vector<Bubble> bubbles;
};

struct SimResult {
  double makespan = 0;
  double bubble_ratio = 0;       // idle / (ranks * makespan)
  bool memory_cap_violated = false;
  std::vector<RankSimResult> ranks;
  // Per rank, per program position (empty unless SimOptions::record_spans).
  std::vector<std::vector<ActionSpan>> spans;
};

struct SimOptions {
  bool record_spans = true;      // needed by the timeline pictures
  bool record_bubbles = true;
  double min_bubble = 1e-9;      // idle gaps shorter than this are not bubbles
};

// Blocks; pure function of its inputs. Fails (InvalidArgument / Deadlock)
// with the same messages as the validator's dry run when the schedule
// cannot run; `costs` must have been Resolve()d against `schedule`.
Result<SimResult> Simulate(const Schedule& schedule, const CostModel& costs, const SimOptions& options = {});

}  // namespace pw
