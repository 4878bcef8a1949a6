#include "harvest/bubble_predictor.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "schedule/lowering.h"

namespace pw {
namespace {

using ActionKey = std::tuple<int, int, int>;  // (kind, stage, microbatch)
using SpanIndex = std::map<ActionKey, ActionSpan>;

ActionKey KeyOf(ActionKind kind, int stage, int microbatch) {
  return {static_cast<int>(kind), stage, microbatch};
}

Status CheckRank(const Schedule& lowered, int rank) {
  if (rank < 0 || rank >= lowered.num_ranks()) {
    return Status::InvalidArgument("bubble predictor: rank " + std::to_string(rank) +
                                   " is not in the schedule's " + std::to_string(lowered.num_ranks()) +
                                   " ranks");
  }
  return Status::Ok();
}

Status CheckMatches(const Schedule& compute, const Schedule& lowered) {
  if (compute.num_ranks() != lowered.num_ranks() || compute.num_stages() != lowered.num_stages()) {
    return Status::InvalidArgument("bubble predictor: the lowered schedule (" +
                                   std::to_string(lowered.num_ranks()) + " ranks) does not match the "
                                   "compute schedule (" + std::to_string(compute.num_ranks()) + " ranks)");
  }
  return Status::Ok();
}

// Simulated span of every compute action, by identity (lowering keeps them).
SpanIndex IndexSpans(const Schedule& compute, const SimResult& sim) {
  SpanIndex span_of;
  for (int r = 0; r < compute.num_ranks(); ++r) {
    const Program& program = compute.programs[r];
    for (size_t i = 0; i < program.size() && i < sim.spans[r].size(); ++i) {
      const Action& a = program[i];
      span_of[KeyOf(a.kind, a.stage, a.microbatch)] = sim.spans[r][i];
    }
  }
  return span_of;
}

// When the data a RECV waits for arrives (ms): the simulated end of its
// producer (the forward of the stage before, or the backward of the stage
// after) plus the communication time; nullopt without a producer.
std::optional<double> ArrivalOf(const Action& recv, const SpanIndex& span_of, const Schedule& compute,
                                const CostModel& costs) {
  const bool fwd = recv.kind == ActionKind::kRecvForward;
  const int peer = fwd ? recv.stage - 1 : recv.stage + 1;
  auto it = span_of.find(KeyOf(ActionKind::kForward, peer, recv.microbatch));
  if (!fwd) {
    it = span_of.find(KeyOf(ActionKind::kBackward, peer, recv.microbatch));
    if (it == span_of.end()) it = span_of.find(KeyOf(ActionKind::kBackwardInput, peer, recv.microbatch));
  }
  if (it == span_of.end()) return std::nullopt;
  const Placement& placement = compute.placement;
  return it->second.end + costs.CommTime(std::min(peer, recv.stage), std::max(peer, recv.stage),
                                         placement.RankOf(peer), placement.RankOf(recv.stage));
}

// The rank's lowered program walked against the simulation: the wait (ms)
// before each action, and the time the rank's last compute ends.
struct ProgramWaits {
  std::vector<double> wait_ms;
  double end_ms = 0;
};

Result<ProgramWaits> WaitsBeforeActions(const Schedule& lowered, int rank, const Schedule& compute,
                                        const SpanIndex& span_of, const CostModel& costs) {
  const Program& program = lowered.programs[rank];
  ProgramWaits out;
  out.wait_ms.assign(program.size(), 0.0);
  double& t = out.end_ms;
  for (size_t i = 0; i < program.size(); ++i) {
    const Action& a = program[i];
    double wait = 0;
    if (IsCompute(a.kind)) {
      auto it = span_of.find(KeyOf(a.kind, a.stage, a.microbatch));
      if (it == span_of.end()) {
        return Status::InvalidArgument("bubble predictor: rank " + std::to_string(rank) + " action " +
                                       lowered.ActionName(a) + " is not in the compute schedule");
      }
      wait = std::max(0.0, it->second.start - t);
      t = std::max(t, it->second.end);
    } else if (a.kind == ActionKind::kRecvForward || a.kind == ActionKind::kRecvBackward) {
      const std::optional<double> arrival = ArrivalOf(a, span_of, compute, costs);
      if (!arrival) {
        return Status::InvalidArgument("bubble predictor: rank " + std::to_string(rank) + " " +
                                       lowered.ActionName(a) + " has no producer in the compute schedule");
      }
      wait = std::max(0.0, *arrival - t);
      t += wait;
    }
    out.wait_ms[i] = wait;
  }
  return out;
}

}  // namespace

Result<BubblePredictor> BubblePredictor::Create(const Schedule& compute_in, const Schedule& lowered,
                                                int rank, const CostModel& costs_ms,
                                                std::optional<double> memory_cap_bytes) {
  PW_RETURN_IF_ERROR(CheckRank(lowered, rank));
  const Schedule compute = StripToCompute(compute_in);
  PW_RETURN_IF_ERROR(CheckMatches(compute, lowered));
  CostModel costs = costs_ms;
  if (memory_cap_bytes) costs.memory_cap = *memory_cap_bytes;
  PW_RETURN_IF_ERROR(costs.Resolve(compute));
  SimOptions options;
  options.record_spans = true;
  options.record_bubbles = true;
  PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(compute, costs, options));
  const SpanIndex span_of = IndexSpans(compute, sim);
  PW_ASSIGN_OR_RETURN(ProgramWaits waits, WaitsBeforeActions(lowered, rank, compute, span_of, costs));

  BubblePredictor p;
  p.rank_ = rank;
  const double us = 1000.0;  // costs are in ms
  const Program& program = lowered.programs[rank];
  p.idle_before_us_.assign(program.size(), 0.0);
  double idle = 0;
  for (size_t i = 0; i < program.size(); ++i) {
    p.idle_before_us_[i] = waits.wait_ms[i] * us;
    idle += waits.wait_ms[i];
  }
  const double t = waits.end_ms;
  // With more than one pipeline rank the tail is spent in the rank's first
  // OPT, in the gradient norm's all-reduce (runtime/executor.h, kNormWait):
  // the simulator charges OPT nothing and lets the rank idle after its last
  // compute; the runtime has it wait inside OPT for the slowest rank.
  p.tail_at_norm_wait_ =
      lowered.num_ranks() > 1 && std::any_of(program.begin(), program.end(), [](const Action& a) {
        return a.kind == ActionKind::kOptimizer;
      });
  p.makespan_us_ = sim.makespan * us;
  p.tail_us_ = std::max(0.0, sim.makespan - t) * us;
  p.idle_per_step_us_ = (idle + std::max(0.0, sim.makespan - t)) * us;
  for (Bubble b : sim.ranks[rank].bubbles) {
    b.start *= us;
    b.end *= us;
    p.bubbles_.push_back(b);
    if (b.free_memory) {
      p.min_free_bytes_ = p.min_free_bytes_ ? std::min(*p.min_free_bytes_, *b.free_memory) : *b.free_memory;
    }
  }
  return p;
}

std::vector<double> BubblePredictor::IdlePeriodsUs() const {
  std::vector<double> periods;
  for (double us : idle_before_us_) {
    if (us > 0) periods.push_back(us);
  }
  if (tail_us_ > 0) periods.push_back(tail_us_);
  return periods;
}

double BubblePredictor::IdleBeforeUs(int action_index) const {
  if (action_index < 0 || action_index >= static_cast<int>(idle_before_us_.size())) return 0;
  return idle_before_us_[action_index];
}

double BubblePredictor::PredictedUs(const IdleEdge& edge) const {
  switch (edge.reason) {
    case IdleReason::kRecvWait:
      return IdleBeforeUs(edge.action_index);
    case IdleReason::kNormWait:
      return tail_at_norm_wait_ ? tail_us_ : 0;
    case IdleReason::kBetweenSteps:
      return tail_at_norm_wait_ ? 0 : tail_us_;
  }
  return 0;
}

}  // namespace pw
