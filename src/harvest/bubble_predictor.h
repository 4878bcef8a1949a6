// BubblePredictor: for one rank, how long each of its idle edges is
// predicted to last — the simulator (sim/simulator.h) run on the compute
// schedule with the costs the runtime measured in the first steps
// (runtime/profile.h, milliseconds), mapped onto the rank's lowered program.
//
// For each action of the rank's lowered program (what the executor runs and
// what IdleEdge::action_index indexes), the predicted idle time before it:
//   RECV_F(s, mb)  max(0, arrival - t): arrival = the simulated end of
//                  F(s-1, mb) on its rank + the cost model's comm time;
//                  t = the rank's simulated time when it reaches the RECV
//   RECV_B(s, mb)  the same with the backward (B or I) of (s+1, mb)
//   F, B, I, W     max(0, simulated start - t) (0 unless an input arrives
//                  over no RECV, which lowered programs do not have)
//   others         0 (SEND, REDUCE_GRAD, OPT cost nothing in the simulator)
// and the tail: makespan - the end of the rank's last compute action. The
// rank's idle time per step is the sum of all of them (= makespan - busy),
// which equals the simulator's bubbles of the rank.
//
// Where the tail is spent: with more than one pipeline rank, in the rank's
// first OPT, whose gradient-norm all-reduce waits for the slowest rank
// (the kNormWait edge); the kBetweenSteps edge after it is then predicted
// 0 (what remains there, the other ranks' longer optimizer steps, the
// runtime learns from the edge's history). With one rank, or a program
// without OPT, the tail is the kBetweenSteps gap.
//
// Memory: with a cap (bytes per rank), the free memory in each of the rank's
// bubbles (cap - what the simulator says the rank holds then: static bytes +
// live activations); min_free_memory_bytes() is the least of them.
//
// Thread-safety: immutable after Create; const methods may run concurrently.
// Failure: Create returns the simulator's error (InvalidArgument for costs
// that do not fit the schedule) or InvalidArgument for a bad rank or a
// lowered schedule that does not match the compute one.
#pragma once

#include <optional>
#include <vector>

#include "core/status.h"
#include "runtime/idle_listener.h"
#include "schedule/schedule.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"

namespace pw {

class BubblePredictor {
 public:
  // `compute`: the compute-only schedule; `lowered`: the same after
  // AddGradientSync + InsertCommunication; `costs_ms`: durations in ms (not
  // yet resolved; copied). `memory_cap_bytes`: per rank, for free memory.
  static Result<BubblePredictor> Create(const Schedule& compute, const Schedule& lowered, int rank,
                                        const CostModel& costs_ms,
                                        std::optional<double> memory_cap_bytes = std::nullopt);

  int rank() const { return rank_; }
  // Predicted idle µs before action `action_index` of the lowered program
  // (0 outside the program).
  double IdleBeforeUs(int action_index) const;
  // makespan - end of the rank's last compute, µs (see "Where the tail is
  // spent" above).
  double TailUs() const { return tail_us_; }
  // True when the tail is predicted at the kNormWait edge, not kBetweenSteps.
  bool tail_at_norm_wait() const { return tail_at_norm_wait_; }
  // The lookup for an edge: the predicted length of the idle period it opens.
  double PredictedUs(const IdleEdge& edge) const;
  // Per step: all idle µs of the rank, and the simulated step (makespan).
  double IdlePerStepUs() const { return idle_per_step_us_; }
  double MakespanUs() const { return makespan_us_; }
  // The simulator's bubbles of the rank, times in µs from the step start.
  const std::vector<Bubble>& bubbles() const { return bubbles_; }
  // Least free memory over the rank's bubbles (cap - held); without a cap
  // or without bubbles, nullopt.
  std::optional<double> min_free_memory_bytes() const { return min_free_bytes_; }
  const std::vector<double>& idle_before_us() const { return idle_before_us_; }
  // The rank's idle periods of one step, µs: every non-zero idle_before_us
  // and the tail, in program order (what a task's steps must fit into).
  std::vector<double> IdlePeriodsUs() const;

 private:
  int rank_ = 0;
  std::vector<double> idle_before_us_;
  double tail_us_ = 0;
  bool tail_at_norm_wait_ = false;
  double idle_per_step_us_ = 0;
  double makespan_us_ = 0;
  std::vector<Bubble> bubbles_;
  std::optional<double> min_free_bytes_;
};

}  // namespace pw
