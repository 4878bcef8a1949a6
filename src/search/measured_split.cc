#include "search/measured_split.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "search/model_costs.h"
#include "sim/simulator.h"

namespace pw::search {
namespace {

StageSpan UnitSpan(int n_layers, int unit) {
  StageSpan span;
  span.has_embedding = unit == 0;
  span.has_head = unit == n_layers + 1;
  span.first_block = std::clamp(unit - 1, 0, n_layers);
  span.num_blocks = unit >= 1 && unit <= n_layers ? 1 : 0;
  return span;
}

bool FitsSchedule(const StageBounds& b, int num_stages, int num_units) {
  if (static_cast<int>(b.size()) != num_stages + 1 || b.front() != 0 || b.back() != num_units) return false;
  for (size_t s = 1; s < b.size(); ++s) {
    if (b[s] <= b[s - 1]) return false;
  }
  return true;
}

std::string DescribeUnit(const char* name, const StageCost& c, bool split) {
  std::string out = name;
  char buf[64];
  auto add = [&](const char* key, const std::optional<double>& v) {
    if (!v) return;
    std::snprintf(buf, sizeof buf, "%s %s %.3g", out == name ? "" : ",", key, *v);
    out += buf;
  };
  add("F", c.forward);
  if (split) {
    add("I", c.backward_input);
    add("W", c.backward_weight);
  }
  add("B", c.backward);
  out += " ms";
  // What splitting the backward costs here: zero-bubble schedules win only
  // where I + W is close to B (the schedule is then chosen on that price).
  if (split && c.backward_input && c.backward_weight && c.backward && *c.backward > 0) {
    std::snprintf(buf, sizeof buf, " (I + W = %.2fx B)", (*c.backward_input + *c.backward_weight) / *c.backward);
    out += buf;
  }
  return out;
}

}  // namespace

std::string DescribeUnitTimings(const UnitTimings& t) {
  return DescribeUnit("block", t.block, true) + "; head" + DescribeUnit("", t.head, false);
}

Result<ModelProfile> MeasuredUnitProfile(const ModelConfig& model, const UnitTimings& timings, int microbatch_size) {
  const int n = model.n_layers;
  std::vector<StageCost> units;
  units.reserve(n + 2);
  const double hidden_bytes = 4.0 * model.seq_len * microbatch_size * model.d_model;
  for (int u = 0; u < n + 2; ++u) {
    StageCost c = u == 0 ? timings.embedding : u == n + 1 ? timings.head : timings.block;
    c.activation_bytes = EstimateActivationBytes(model, UnitSpan(n, u), microbatch_size);
    c.output_bytes = u == n + 1 ? 4.0 : hidden_bytes;
    units.push_back(c);
  }
  ModelProfile profile;
  Result<std::vector<StageCost>> resolved = ResolveCostEntries(units);
  if (!resolved.ok()) return resolved.status().WithContext("measured unit costs");
  profile.pieces = std::move(*resolved);
  profile.layers = true;
  return profile;
}

std::string BlocksPerStage(const StageBounds& unit_bounds, int n_layers) {
  std::string out;
  for (size_t s = 0; s + 1 < unit_bounds.size(); ++s) {
    // Blocks are units 1..n_layers.
    const int lo = std::max(static_cast<int>(std::lround(unit_bounds[s])), 1);
    const int hi = std::min(static_cast<int>(std::lround(unit_bounds[s + 1])), n_layers + 1);
    out += (out.empty() ? "" : ",") + std::to_string(std::max(0, hi - lo));
  }
  return out;
}

StageBounds UnitBoundsOf(const ModelPartition& partition) {
  StageBounds b = {0};
  for (const StageSpan& span : partition.stages) {
    const double units = span.num_blocks + (span.has_embedding ? 1 : 0) + (span.has_head ? 1 : 0);
    b.push_back(b.back() + units);
  }
  return b;
}

Result<SplitOutcome> SimulateSplit(const ModelProfile& units, int n_layers, const Schedule& schedule,
                                   const StageBounds& bounds, const CostModel& base) {
  if (!FitsSchedule(bounds, schedule.num_stages(), units.num_pieces())) {
    return Status::InvalidArgument("the split does not give each of the schedule's " +
                                   std::to_string(schedule.num_stages()) + " stages at least one of the model's " +
                                   std::to_string(units.num_pieces()) + " units");
  }
  CostModel costs = WithStages(base, StageCostsFor(units, bounds));
  costs.static_bytes = {0};  // ties compare activations only
  costs.memory_cap.reset();
  PW_RETURN_IF_ERROR(costs.Resolve(schedule));
  SimOptions options;
  options.record_spans = false;
  options.record_bubbles = false;
  PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(schedule, costs, options));
  SplitOutcome out;
  out.bounds = bounds;
  out.blocks_per_stage = BlocksPerStage(bounds, n_layers);
  out.makespan = sim.makespan;
  out.bubble_ratio = sim.bubble_ratio;
  for (const RankSimResult& r : sim.ranks) out.peak_activations = std::max(out.peak_activations, r.peak_memory);
  return out;
}

Result<SplitOutcome> BestSplitBySimulation(const ModelProfile& units, int n_layers, const Schedule& schedule,
                                           const std::vector<StageBounds>& starts, const CostModel& base) {
  const int num_stages = schedule.num_stages();
  PW_ASSIGN_OR_RETURN(StageBounds balanced, BalancedBounds(units, schedule.placement, base,
                                                           schedule.num_microbatches, schedule.UsesSplitBackward()));
  // Shorter makespan wins; within 1e-9 relative, fewer held activations.
  auto better = [](const SplitOutcome& a, const SplitOutcome& b) {
    const double tol = 1e-9 * std::max(1.0, b.makespan);
    if (a.makespan < b.makespan - tol) return true;
    if (a.makespan > b.makespan + tol) return false;
    return a.peak_activations < b.peak_activations * (1 - 1e-9);
  };
  PW_ASSIGN_OR_RETURN(SplitOutcome best, SimulateSplit(units, n_layers, schedule, balanced, base));
  for (const StageBounds& start : starts) {
    if (!FitsSchedule(start, num_stages, units.num_pieces())) continue;
    Result<SplitOutcome> o = SimulateSplit(units, n_layers, schedule, start, base);
    if (o.ok() && better(*o, best)) best = std::move(*o);
  }
  // Each accepted move lowers (makespan, memory), so this ends; the cap
  // bounds the work on a long model (each round simulates 2(S-1) splits).
  const int max_rounds = 4 * units.num_pieces() + 16;
  for (int round = 0; round < max_rounds; ++round) {
    bool improved = false;
    for (int i = 1; i < num_stages; ++i) {
      for (double step : {-1.0, 1.0}) {
        StageBounds trial = best.bounds;
        trial[i] += step;
        if (trial[i] <= trial[i - 1] || trial[i] >= trial[i + 1]) continue;
        Result<SplitOutcome> o = SimulateSplit(units, n_layers, schedule, trial, base);
        if (o.ok() && better(*o, best)) {
          best = std::move(*o);
          improved = true;
        }
      }
    }
    if (!improved) break;
  }
  return best;
}

}  // namespace pw::search
