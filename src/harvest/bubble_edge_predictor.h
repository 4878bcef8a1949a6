// BubbleEdgePredictor: for the gated policy, how long the bubble that an
// idle edge opens will last, and so what budget the side tasks get.
//
// The executor's edges alternate (OnIdle, OnBusy, ...). Each idle edge is
// keyed by the action of the rank's lowered program that waits
// (IdleEdge::action_index; -1 for the end of the step). The prediction for
// an edge is the simulator's on measured costs (BubblePredictor) until that
// edge has been seen kObservedEdges times; from then on it is the larger of
// that and the edge's own history, mean minus mean absolute deviation (EWMA,
// weight 0.25). The simulator knows the schedule's shape but not the
// runtime's per-action overheads, which make real bubbles longer than
// predicted; the history alone, without the simulator's floor, resumes less
// and harvests less (docs/harvest.md). A bubble predicted shorter than
// min_resume_us gets no budget (not worth the signals), and before the
// simulator's prediction exists no bubble does.
//
// Pure: no clock is read here (the edges' times are arguments), no threads.
// Thread-safety: one thread (the manager's training thread) drives it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "harvest/bubble_predictor.h"
#include "runtime/idle_listener.h"

namespace pw {

// An edge seen this many times is predicted from its own history too.
inline constexpr int kObservedEdges = 3;

class BubbleEdgePredictor {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // `program_size`: actions in the rank's lowered program (the edges it can
  // learn; others are predicted but not learned). `min_resume_us`: shorter
  // predicted bubbles get no budget.
  BubbleEdgePredictor(size_t program_size, double min_resume_us);

  // The simulator's prediction on measured costs; budgets start with it.
  void SetSimulated(BubblePredictor simulated) { simulated_ = std::move(simulated); }
  const std::optional<BubblePredictor>& simulated() const { return simulated_; }

  // The rank went idle at `edge` at `now`. False (and nothing changes) when
  // it already was: edges alternate, but a repeated one is ignored.
  bool OnIdle(const IdleEdge& edge, TimePoint now);
  // The rank computes again at `now`: returns how long the bubble lasted,
  // in seconds, and learns it for the edge that opened it; nullopt (and
  // nothing changes) when the rank was not idle.
  std::optional<double> OnBusy(TimePoint now);

  bool idle() const { return idle_; }
  TimePoint idle_since() const { return idle_since_; }
  // The action index of the edge that opened the current (or last) bubble.
  int open_edge() const { return open_edge_; }

  // The predicted length of the bubble `edge` opens, µs: the simulator's,
  // raised to the edge's history once it has been seen kObservedEdges
  // times. 0 before SetSimulated.
  double PredictedUs(const IdleEdge& edge) const;
  // The budget a gated task gets for that bubble: PredictedUs, or nullopt
  // before SetSimulated or when shorter than min_resume_us.
  std::optional<double> BudgetUs(const IdleEdge& edge) const;
  // How often the bubble at `action_index` has been measured.
  int64_t TimesSeen(int action_index) const;

 private:
  // Observed lengths of one edge's bubbles: EWMA of the length and of its
  // absolute deviation.
  struct EdgeHistory {
    int64_t seen = 0;
    double mean_us = 0, deviation_us = 0;
  };
  void Learn(int action_index, double idle_us);

  double min_resume_us_;
  std::optional<BubblePredictor> simulated_;
  // Indexed by action index + 1; sized at construction, so the training
  // thread never allocates here.
  std::vector<EdgeHistory> history_;
  bool idle_ = false;
  TimePoint idle_since_{};
  int open_edge_ = 0;
};

}  // namespace pw
