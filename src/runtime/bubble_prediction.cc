#include "runtime/bubble_prediction.h"

#include <algorithm>
#include <random>

#include "schedule/list_scheduler.h"
#include "sim/simulator.h"

namespace pw {
namespace {

// ListSchedule hooks for one draw: compute actions take a sampled duration,
// the rest the cost model's; records compute time (IsModelCompute) and the
// makespan.
class JitterHooks {
 public:
  JitterHooks(const Schedule& schedule, const CostModel& costs, const ComputeSamples& samples, std::mt19937_64& rng)
      : schedule_(schedule), costs_(costs), samples_(samples), rng_(rng) {}

  // As the simulator's: the action's time plus the overhead before it.
  double Duration(RankId r, const Action& a) {
    if (IsCompute(a.kind)) {
      auto it = samples_.find({a.stage, a.kind});
      if (it != samples_.end() && !it->second.empty()) {
        std::uniform_int_distribution<size_t> pick(0, it->second.size() - 1);
        return costs_.action_overhead + it->second[pick(rng_)];
      }
    }
    return costs_.action_overhead + costs_.Duration(r, a, schedule_.kinds);
  }
  double CommDelay(const Action& consumer, StageId producer) {
    const Placement& placement = schedule_.placement;
    return costs_.CommTime(producer, consumer.stage, placement.RankOf(producer), placement.RankOf(consumer.stage));
  }
  void OnAction(RankId r, size_t index, double start, double end) {
    if (IsModelCompute(schedule_.kinds, schedule_.programs[r][index].kind)) {
      compute += end - start - costs_.action_overhead;
    }
    makespan = std::max(makespan, end);
  }

  double compute = 0;
  double makespan = 0;

 private:
  const Schedule& schedule_;
  const CostModel& costs_;
  const ComputeSamples& samples_;
  std::mt19937_64& rng_;
};

double ComputeBubbleRatio(double compute, int ranks, double makespan) {
  return makespan > 0 ? std::max(0.0, 1.0 - compute / (ranks * makespan)) : 0.0;
}

}  // namespace

SchedulePrediction PredictSchedule(const Schedule& lowered, CostModel costs, double boundary_bytes,
                                   int receive_window) {
  SchedulePrediction prediction;
  if (!costs.Resolve(lowered).ok()) return prediction;
  SimOptions sim_options;
  sim_options.record_spans = true;
  sim_options.record_bubbles = false;
  Result<SimResult> sim = Simulate(lowered, costs, sim_options);
  if (!sim.ok()) return prediction;
  double compute = 0;
  for (int r = 0; r < lowered.num_ranks(); ++r) {
    for (size_t i = 0; i < lowered.programs[r].size(); ++i) {
      if (IsModelCompute(lowered.kinds, lowered.programs[r][i].kind)) {
        compute += sim->spans[r][i].end - sim->spans[r][i].start;
      }
    }
  }
  prediction.bubble_ratio = ComputeBubbleRatio(compute, lowered.num_ranks(), sim->makespan);
  for (int r = 0; r < lowered.num_ranks(); ++r) {
    int recvs = 0, sends = 0;
    for (const Action& a : lowered.programs[r]) {
      recvs += a.kind == ActionKind::kRecvForward || a.kind == ActionKind::kRecvBackward;
      sends += a.kind == ActionKind::kSendForward || a.kind == ActionKind::kSendBackward;
    }
    const int buffers = std::min(recvs, receive_window) + (sends > 0 ? 1 : 0);
    prediction.peak_bytes.push_back(sim->ranks[r].peak_memory + buffers * boundary_bytes);
    prediction.activation_peak_bytes.push_back(sim->ranks[r].peak_memory - costs.StaticBytes(r));
  }
  return prediction;
}

ComputeSamples CollectComputeSamples(const std::vector<std::vector<TimelineSpan>>& ranks, int64_t from_step) {
  ComputeSamples samples;
  for (const auto& spans : ranks) {
    for (const TimelineSpan& s : spans) {
      if (s.step >= from_step && IsCompute(s.kind)) samples[{s.stage, s.kind}].push_back(s.dur_us / 1000.0);
    }
  }
  return samples;
}

Result<double> ExpectedBubbles(const Schedule& lowered, CostModel costs, const ComputeSamples& samples, int draws,
                               uint64_t seed) {
  PW_RETURN_IF_ERROR(costs.Resolve(lowered));
  std::mt19937_64 rng(seed);
  double sum = 0;
  for (int d = 0; d < draws; ++d) {
    JitterHooks hooks(lowered, costs, samples, rng);
    PW_RETURN_IF_ERROR(ListSchedule(lowered, hooks));
    sum += ComputeBubbleRatio(hooks.compute, lowered.num_ranks(), hooks.makespan);
  }
  return draws > 0 ? sum / draws : 0.0;
}

}  // namespace pw
