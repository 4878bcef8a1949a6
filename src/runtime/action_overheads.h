// ActionOverheads: what a training step costs besides F, B, I and W,
// measured from the executor's timeline — so that the simulator, charging
// these too, predicts the bubbles the executor really has.
//
// From the spans of the steps >= `from_step` of every pipeline rank:
//   SEND_F / SEND_B   median duration (posting a send: Gloo writes what the
//                     socket takes on the calling thread)
//   RECV_F / RECV_B   10th percentile of the durations: the fixed part of a
//                     receive whose data is already there (most receives in
//                     a pipeline's steady state wait, so the median would
//                     charge the wait twice)
//   REDUCE_GRAD       median duration (launching the data-parallel average)
//   OPT               per step, the smallest over ranks of the rank's OPT time
//                     per OPT action: the rank that reaches OPT last waits
//                     least for the gradient-norm all-reduce, so its time is
//                     the optimizer's own (plus the data-parallel all-reduce
//                     still running); median over steps
//   per-action overhead  the median gap between two consecutive actions of
//                     a rank in one step (the next one's start - the
//                     previous one's end): what the executor does between
//                     actions, which no span holds
//   link latency      for each receive that was waiting before its data was
//                     produced: its end - the producer's end on the peer rank
//                     - the receive's fixed part; the median. Spans of
//                     different ranks share a time axis (runtime/timeline.h).
// Kinds that never ran are absent; the latency and the per-action overhead
// are 0 without samples.
//
// Times in milliseconds, like MeasuredProfile's stage costs. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/timeline.h"
#include "sim/cost_model.h"

namespace pw {

struct ActionOverheads {
  std::map<std::string, double> kind_costs;  // CostModel::kind_costs names
  double link_latency_ms = 0;
  int latency_samples = 0;
  double action_overhead_ms = 0;
  int action_overhead_samples = 0;
};

// `ranks[r]`: pipeline rank r's spans (GatherTimelines).
ActionOverheads MeasureActionOverheads(const std::vector<std::vector<TimelineSpan>>& ranks, int64_t from_step);

// Adds `overheads` to `costs`: its kind costs, its per-action overhead as
// action_overhead, and its latency as comm_latency with unlimited bandwidth
// (the latency was measured with the real message size, so it already holds
// the transfer).
void AddActionOverheads(const ActionOverheads& overheads, CostModel& costs);

}  // namespace pw
