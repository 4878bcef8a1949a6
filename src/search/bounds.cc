#include "search/bounds.h"

#include <algorithm>

namespace pw::search {
namespace {

// The least time of a stage's B, I or W: a microbatch the stage
// recomputed may take its after-recompute time (sim/cost_model.h), which a
// bound must not exceed.
double LeastTime(const std::optional<double>& plain, const std::optional<double>& after_recompute) {
  return after_recompute ? std::min(*plain, *after_recompute) : *plain;
}
double LeastB(const StageCost& c) { return LeastTime(c.backward, c.backward_after_recompute); }
double LeastI(const StageCost& c) { return LeastTime(c.backward_input, c.backward_input_after_recompute); }
double LeastW(const StageCost& c) { return LeastTime(c.backward_weight, c.backward_weight_after_recompute); }

// The chain that the first microbatch's data follows.
struct Chains {
  // forward_to[s]: earliest start of F(s).
  std::vector<double> forward_to;
  // backward_below[s]: least time the backwards of stages < s need after
  // B/I(s) ends (I only with split backward, since W is off the chain).
  std::vector<double> backward_below;
};

Chains ComputeChains(const Placement& placement, const CostModel& costs, bool split_backward) {
  const int n = placement.num_stages();
  Chains c{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  for (StageId s = 1; s < n; ++s) {
    const RankId from = placement.RankOf(s - 1), to = placement.RankOf(s);
    const double comm = from != to ? costs.CommTime(s - 1, s, from, to) : 0.0;
    const StageCost& prev = costs.Stage(s - 1);
    const double speed = costs.cluster.Speed(from);
    c.forward_to[s] = c.forward_to[s - 1] + *prev.forward / speed + comm;
    c.backward_below[s] =
        c.backward_below[s - 1] + (split_backward ? LeastI(prev) : LeastB(prev)) / speed + comm;
  }
  return c;
}

double PerMicrobatchWork(const Placement& placement, const CostModel& costs, RankId r, bool split_backward) {
  double work = 0;
  for (StageId s : placement.StagesOf(r)) {
    const StageCost& c = costs.Stage(s);
    work += *c.forward + (split_backward ? LeastI(c) + LeastW(c) : LeastB(c));
  }
  return work / costs.cluster.Speed(r);
}

double RankBound(const Placement& placement, const CostModel& costs, const Chains& chains, RankId r,
                 double work, bool split_backward) {
  // The first stage of r is the lowest it owns (StagesOf is ascending). With
  // fused backward r's last action is the B of that stage (any other B of r
  // precedes it in the chain); with split backward it may be a W: no tail.
  const StageId first = placement.StagesOf(r).front();
  const double tail = split_backward ? 0.0 : chains.backward_below[first];
  return chains.forward_to[first] + work + tail;
}

}  // namespace

FamilyBounds ComputeBounds(const Placement& placement, const CostModel& costs, int num_microbatches,
                           bool split_backward) {
  const int n = placement.num_stages();
  const Chains chains = ComputeChains(placement, costs, split_backward);
  FamilyBounds out;
  for (RankId r = 0; r < placement.num_ranks(); ++r) {
    const double work = num_microbatches * PerMicrobatchWork(placement, costs, r, split_backward);
    if (work > out.work) {
      out.work = work;
      out.busiest_rank = r;
    }
    out.time = std::max(out.time, RankBound(placement, costs, chains, r, work, split_backward));
    double largest_activation = 0;
    for (StageId s : placement.StagesOf(r)) {
      largest_activation = std::max(largest_activation, costs.Stage(s).activation_bytes);
    }
    out.memory = std::max(out.memory, costs.StaticBytes(r) + largest_activation);
  }
  // One microbatch down and back up: F of every stage, B (or I) of every
  // stage, and with split backward stage 0's W after its I.
  const StageCost& last = costs.Stage(n - 1);
  const double last_speed = costs.cluster.Speed(placement.RankOf(n - 1));
  double path = chains.forward_to[n - 1] + *last.forward / last_speed + chains.backward_below[n - 1] +
                (split_backward ? LeastI(last) : LeastB(last)) / last_speed;
  if (split_backward) path += LeastW(costs.Stage(0)) / costs.cluster.Speed(placement.RankOf(0));
  out.time = std::max(out.time, path);
  return out;
}

std::vector<double> RankTimeBounds(const Placement& placement, const CostModel& costs, int num_microbatches,
                                   bool split_backward) {
  const Chains chains = ComputeChains(placement, costs, split_backward);
  std::vector<double> out(placement.num_ranks());
  for (RankId r = 0; r < placement.num_ranks(); ++r) {
    const double work = num_microbatches * PerMicrobatchWork(placement, costs, r, split_backward);
    out[r] = RankBound(placement, costs, chains, r, work, split_backward);
  }
  return out;
}

}  // namespace pw::search
