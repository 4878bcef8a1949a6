#include "sim/simulator.h"

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
  }

  double Duration(RankId, const Action& a) { return costs_.Duration(a, schedule_.kinds); }
  double CommDelay(const Action& consumer, StageId producer) { return costs_.CommTime(producer, consumer.stage); }

  void OnAction(RankId r, size_t index, double start, double end) {
    RankSimResult& rank = result_.ranks[r];
    if (options_.record_bubbles && start - last_end_[r] > options_.min_bubble) {
      AddBubble(r, last_end_[r], start);
    }
    rank.busy += end - start;
    last_end_[r] = end;
    if (options_.record_spans) result_.spans[r][index] = {start, end};
    const Action& a = schedule_.programs[r][index];
    const double delta = MemoryDelta(a);
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
