// Bubble predictions for the runtime: what the simulator expects of the
// lowered schedule the executor runs, with the executor's definition of a
// bubble (StepOutcome::bubble_ratio: 1 - time in F, B, I, W, RECOMPUTE /
// (ranks x makespan); time in sends, receives, REDUCE_GRAD, OPT, DROP,
// OFFLOAD and RELOAD counts as bubble on both sides).
//
// Two predictions:
//   PredictSchedule   one simulation with each (stage, kind)'s mean cost,
//                     and the per-rank peak memory (the boundary buffers the
//                     executor holds included);
//   ExpectedBubbles   the mean over many simulations in which every compute
//                     action takes a duration drawn from those measured for
//                     its (stage, kind) — the jitter of real kernels. A
//                     pipeline waits for the slower of two ranks at each
//                     hand-over, so jitter makes bubbles that mean costs do
//                     not show (the expected makespan of a max-plus system
//                     is at least its makespan at mean costs).
// Pure; deterministic for a given seed.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "core/status.h"
#include "runtime/timeline.h"
#include "schedule/schedule.h"
#include "sim/cost_model.h"

namespace pw {

struct SchedulePrediction {
  double bubble_ratio = 0;
  std::vector<double> peak_bytes;  // per pipeline rank
  // Per pipeline rank: the part of peak_bytes that is activations (the
  // simulator's peak less the static bytes).
  std::vector<double> activation_peak_bytes;
};

// `lowered`: after AddGradientSync and InsertCommunication. The executor
// holds up to `receive_window` posted receive buffers and one send in
// flight, each `boundary_bytes`. Zeros when it cannot be simulated.
SchedulePrediction PredictSchedule(const Schedule& lowered, CostModel costs, double boundary_bytes,
                                   int receive_window);

// Measured durations (ms) of compute actions by (stage, kind), from the
// spans of steps >= from_step.
using ComputeSamples = std::map<std::pair<int, ActionKind>, std::vector<double>>;
ComputeSamples CollectComputeSamples(const std::vector<std::vector<TimelineSpan>>& ranks, int64_t from_step);

// The mean bubble ratio over `draws` simulations of `lowered` (see the
// header). Compute actions without samples, and every other action, take
// `costs`' times. InvalidArgument when `costs` does not fit the schedule.
Result<double> ExpectedBubbles(const Schedule& lowered, CostModel costs, const ComputeSamples& samples,
                               int draws = 64, uint64_t seed = 1);

}  // namespace pw
