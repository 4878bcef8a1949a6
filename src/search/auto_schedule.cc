#include "search/auto_schedule.h"

#include <algorithm>
#include <cstdio>

#include "model/partitioner.h"
#include "search/model_costs.h"
#include "schedule/generators.h"
#include "sim/simulator.h"

namespace pw {

std::string ScheduleChoice::Describe() const {
  char buf[256];
  const Candidate& best = candidates.front();
  std::snprintf(buf, sizeof buf, "%s (simulated bubble %.1f%%", best.family.c_str(), 100 * best.bubble_ratio);
  std::string out = buf;
  if (candidates.size() > 1) {
    const Candidate& next = candidates[1];
    std::snprintf(buf, sizeof buf, "; next %s, %.1f%% slower", next.family.c_str(),
                  100 * (next.makespan / best.makespan - 1));
    out += buf;
  }
  return out + ")";
}

Result<ScheduleChoice> ChooseScheduleBySimulation(const ModelConfig& model, int pp, int microbatches,
                                                  const std::string& layers_per_stage) {
  ScheduleChoice choice;
  for (const std::string& family : BuiltinScheduleNames()) {
    GeneratorOptions g;
    g.num_ranks = pp;
    g.num_microbatches = microbatches;
    Result<Schedule> s = GenerateSchedule(family, g);
    if (!s.ok()) continue;  // the family does not apply to this shape
    Result<ModelPartition> partition = PartitionModel(model, s->num_stages(), layers_per_stage);
    if (!partition.ok()) continue;
    // Activation bytes scale with the microbatch size on every stage alike,
    // so one sequence ranks the families as well as the run's size would.
    CostModel costs = EstimateCostModel(model, *partition, /*microbatch_size=*/1, s->placement);
    costs.static_bytes = {0};  // the tie-break compares activations only
    if (!costs.Resolve(*s).ok()) continue;
    SimOptions options;
    options.record_spans = false;
    options.record_bubbles = false;
    Result<SimResult> sim = Simulate(*s, costs, options);
    if (!sim.ok()) continue;
    ScheduleChoice::Candidate c{family, sim->makespan, sim->bubble_ratio, 0};
    for (const RankSimResult& r : sim->ranks) c.peak_activations = std::max(c.peak_activations, r.peak_memory);
    choice.candidates.push_back(c);
  }
  if (choice.candidates.empty()) {
    return Status::FailedPrecondition("--schedule auto: no built-in schedule applies to " + std::to_string(pp) +
                                      " ranks and " + std::to_string(microbatches) +
                                      " microbatches with this model; name a schedule instead");
  }
  std::stable_sort(choice.candidates.begin(), choice.candidates.end(), [](const auto& a, const auto& b) {
    // Makespans within 0.1 % count as equal; then the leaner schedule wins.
    if (std::abs(a.makespan - b.makespan) > 1e-3 * std::min(a.makespan, b.makespan)) return a.makespan < b.makespan;
    return a.peak_activations < b.peak_activations;
  });
  choice.family = choice.candidates.front().family;
  return choice;
}

}  // namespace pw
