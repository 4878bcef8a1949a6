#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/check.h"
#include "schedule/list_scheduler.h"

namespace pw {
namespace {

// Hooks for ListSchedule that charge the cost model and record time, memory
// and bubbles. Each rank's actions arrive in program order.
class SimHooks {
 public:
  SimHooks(const Schedule& schedule, const CostModel& costs, const SimOptions& options, SimResult& result)
      : schedule_(schedule), costs_(costs), options_(options), result_(result) {
    const int p = schedule.num_ranks();
    result_.ranks.assign(p, {});
    memory_.assign(p, 0.0);
    last_end_.assign(p, 0.0);
    for (int r = 0; r < p; ++r) {
      memory_[r] = costs.StaticBytes(r);
      result_.ranks[r].peak_memory = memory_[r];
    }
    if (options.record_spans) {
      result_.spans.resize(p);
      for (int r = 0; r < p; ++r) result_.spans[r].resize(schedule.programs[r].size());
    }
    if (costs.HasFiniteBandwidth()) {
      message_delay_.assign(static_cast<size_t>(schedule.num_stages()) * schedule.num_microbatches * 2, -1.0);
    }
    // Without sites every boundary has one delay whichever ranks it joins:
    // looked up per message instead of computed (p = 1024 runs 17 M of them).
    if (!costs.cluster.has_sites()) {
      for (StageId s = 0; s + 1 < schedule.num_stages(); ++s) boundary_delay_.push_back(costs.CommTime(s, s + 1, 0, 0));
    }
    // The time and memory change of F, B, I and W per stage, on the rank
    // that owns the stage (the only one that runs them), from the same
    // functions as other kinds: tables instead of a call, a speed lookup and
    // a switch for each of millions of actions; the numbers are identical.
    program_.resize(p);
    for (int r = 0; r < p; ++r) program_[r] = schedule.programs[r].data();
    const int stages = schedule.num_stages();
    compute_time_.resize(static_cast<size_t>(stages) * kComputeKinds);
    compute_memory_.resize(compute_time_.size());
    for (StageId st = 0; st < stages; ++st) {
      const StageCost& c = costs.Stage(st);
      PW_CHECK(c.forward && c.backward && c.backward_input && c.backward_weight,
               "Simulate: the cost model is not resolved; call CostModel::Resolve(schedule) first");
      for (int k = 0; k < kComputeKinds; ++k) {
        const Action a{st, 0, static_cast<ActionKind>(k)};
        compute_time_[st * kComputeKinds + k] = costs.Duration(schedule.placement.RankOf(st), a, schedule.kinds);
        compute_memory_[st * kComputeKinds + k] = MemoryDelta(a);
      }
    }
    MarkRecomputedMicrobatches();
  }

  // The action's own time plus the overhead before it: ListSchedule's
  // start is when the rank could begin, OnAction moves it past the overhead.
  double Duration(RankId r, const Action& a) { return costs_.action_overhead + ActionTime(r, a); }

  double CommDelay(const Action& consumer, StageId producer) {
    if (!message_delay_.empty()) {
      const double delay = message_delay_[MessageIndex(producer, consumer.microbatch, consumer.stage > producer)];
      if (delay >= 0) return delay;
    }
    if (!boundary_delay_.empty()) return boundary_delay_[std::min(producer, consumer.stage)];
    const Placement& placement = schedule_.placement;
    return costs_.CommTime(producer, consumer.stage, placement.RankOf(producer), placement.RankOf(consumer.stage));
  }

  void OnAction(RankId r, size_t index, double start, double end) {
    start += costs_.action_overhead;
    const Action& a = program_[r][index];
    if (!message_delay_.empty()) SendOnLink(r, a, end);
    RankSimResult& rank = result_.ranks[r];
    if (options_.record_bubbles && start - last_end_[r] > options_.min_bubble) {
      AddBubble(r, last_end_[r], start);
    }
    rank.busy += end - start;
    last_end_[r] = end;
    if (options_.record_spans) result_.spans[r][index] = {start, end};
    const double delta = IsComputeKind(a.kind) ? compute_memory_[a.stage * kComputeKinds + static_cast<int>(a.kind)]
                                               : MemoryDelta(a);
    if (delta != 0) {
      memory_[r] += delta;
      if (memory_[r] > rank.peak_memory) rank.peak_memory = memory_[r];
    }
  }

  // Closes each rank's trailing bubble at the makespan.
  void Finish(double makespan) {
    if (!options_.record_bubbles) return;
    for (size_t r = 0; r < last_end_.size(); ++r) {
      if (makespan - last_end_[r] > options_.min_bubble) AddBubble(static_cast<RankId>(r), last_end_[r], makespan);
    }
  }

  double MaxEnd() const {
    double m = 0;
    for (double e : last_end_) m = std::max(m, e);
    return m;
  }

 private:
  // F, B, I, W: the kinds with ids 0..3, which the tables hold per stage.
  static constexpr int kComputeKinds = 4;
  static bool IsComputeKind(ActionKind k) { return static_cast<int>(k) < kComputeKinds; }
  static_assert(static_cast<int>(ActionKind::kForward) == 0 && static_cast<int>(ActionKind::kBackward) == 1 &&
                static_cast<int>(ActionKind::kBackwardInput) == 2 && static_cast<int>(ActionKind::kBackwardWeight) == 3);

  double ActionTime(RankId r, const Action& a) const {
    if (IsComputeKind(a.kind)) {
      const size_t index = a.stage * kComputeKinds + static_cast<int>(a.kind);
      if (!recomputed_.empty() && a.microbatch >= 0 &&
          recomputed_[static_cast<size_t>(a.stage) * schedule_.num_microbatches + a.microbatch]) {
        return compute_time_after_recompute_[index];
      }
      return compute_time_[index];
    }
    return costs_.Duration(r, a, schedule_.kinds);
  }

  size_t MessageIndex(StageId producer, MicrobatchId mb, bool forward) const {
    return (static_cast<size_t>(producer) * schedule_.num_microbatches + mb) * 2 + (forward ? 1 : 0);
  }

  // With a finite bandwidth a link carries one message at a time: F's output
  // (and B's or I's input gradient) leaves when the action ends and the link
  // from r to the receiving rank is free, occupies it for bytes / bandwidth,
  // and arrives the link's latency later. A rank's sends reach here in its
  // program order, which is the order of their times, so each directed link
  // is reserved in time order. Records the delay its consumer will see.
  void SendOnLink(RankId r, const Action& a, double end) {
    const bool forward = a.kind == ActionKind::kForward;
    if (!forward && a.kind != ActionKind::kBackward && a.kind != ActionKind::kBackwardInput) return;
    const StageId to_stage = forward ? a.stage + 1 : a.stage - 1;
    if (to_stage < 0 || to_stage >= schedule_.num_stages() || a.microbatch < 0) return;
    const RankId to = schedule_.placement.RankOf(to_stage);
    if (to == r) return;
    const double bandwidth = costs_.LinkBandwidth(r, to);
    double& free_at = link_free_at_[static_cast<int64_t>(r) * schedule_.num_ranks() + to];
    const double leaves = std::max(end, free_at);
    free_at = leaves + (std::isinf(bandwidth) ? 0.0 : costs_.BoundaryBytes(a.stage, to_stage) / bandwidth);
    message_delay_[MessageIndex(a.stage, a.microbatch, forward)] = free_at + costs_.LinkLatency(r, to) - end;
  }

  // Where some stage's backward has its own time after a recomputation:
  // which (stage, microbatch) the schedule recomputes, and the backward
  // times that apply to them. Otherwise recomputed_ stays empty.
  void MarkRecomputedMicrobatches() {
    const std::optional<ActionKind> recompute = schedule_.kinds.Find(kRecomputeKindName);
    if (!recompute) return;
    bool any = false;
    for (StageId st = 0; st < schedule_.num_stages(); ++st) any = any || costs_.Stage(st).HasBackwardAfterRecompute();
    if (!any) return;
    compute_time_after_recompute_.resize(compute_time_.size());
    for (StageId st = 0; st < schedule_.num_stages(); ++st) {
      for (int k = 0; k < kComputeKinds; ++k) {
        const Action a{st, 0, static_cast<ActionKind>(k)};
        compute_time_after_recompute_[st * kComputeKinds + k] =
            costs_.DurationAfterRecompute(schedule_.placement.RankOf(st), a, schedule_.kinds);
      }
    }
    recomputed_.assign(static_cast<size_t>(schedule_.num_stages()) * schedule_.num_microbatches, false);
    for (const auto& program : schedule_.programs) {
      for (const Action& a : program) {
        if (a.kind == *recompute && a.microbatch >= 0 && a.microbatch < schedule_.num_microbatches) {
          recomputed_[static_cast<size_t>(a.stage) * schedule_.num_microbatches + a.microbatch] = true;
        }
      }
    }
  }

  void AddBubble(RankId r, double start, double end) {
    Bubble b{start, end, memory_[r], std::nullopt};
    if (costs_.memory_cap) b.free_memory = *costs_.memory_cap - memory_[r];
    result_.ranks[r].bubbles.push_back(b);
  }

  double MemoryDelta(const Action& a) const {
    const StageCost& c = costs_.Stage(a.stage);
    switch (a.kind) {
      case ActionKind::kForward: return c.activation_bytes;
      case ActionKind::kBackward: return -c.activation_bytes;
      case ActionKind::kBackwardInput: return -c.activation_bytes * c.freed_by_input;
      case ActionKind::kBackwardWeight: return -c.activation_bytes * (1 - c.freed_by_input);
      default:
        if (IsUserKind(a.kind)) return schedule_.kinds.Info(a.kind).memory_delta_fraction * c.activation_bytes;
        return 0;
    }
  }

  const Schedule& schedule_;
  const CostModel& costs_;
  const SimOptions& options_;
  SimResult& result_;
  std::vector<double> memory_;
  std::vector<double> last_end_;
  // Only with a finite bandwidth (SendOnLink): per (stage, microbatch,
  // direction) the delay its message sees (-1: not sent yet), and when each
  // directed link (from * p + to) is free again.
  std::vector<double> message_delay_;
  std::vector<double> boundary_delay_;  // per boundary s | s+1, without sites
  std::vector<const Action*> program_;  // per rank: its program's actions
  // Per stage * kComputeKinds + kind: Duration and MemoryDelta of F, B, I, W.
  std::vector<double> compute_time_;
  std::vector<double> compute_memory_;
  // MarkRecomputedMicrobatches: per stage * num_microbatches + microbatch,
  // and the compute times (as compute_time_) that a recomputed one takes.
  std::vector<bool> recomputed_;
  std::vector<double> compute_time_after_recompute_;
  std::unordered_map<int64_t, double> link_free_at_;
};

}  // namespace

Result<SimResult> Simulate(const Schedule& schedule, const CostModel& costs, const SimOptions& options) {
  SimResult result;
  SimHooks hooks(schedule, costs, options, result);
  PW_RETURN_IF_ERROR(ListSchedule(schedule, hooks));
  result.makespan = hooks.MaxEnd();
  hooks.Finish(result.makespan);
  double busy = 0;
  for (RankSimResult& r : result.ranks) {
    busy += r.busy;
    if (costs.memory_cap && r.peak_memory > *costs.memory_cap) {
      r.memory_cap_violated = true;
      result.memory_cap_violated = true;
    }
  }
  const double capacity = result.makespan * schedule.num_ranks();
  result.bubble_ratio = capacity > 0 ? std::max(0.0, 1.0 - busy / capacity) : 0.0;
  return result;
}

}  // namespace pw
