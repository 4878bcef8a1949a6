#include "search/model_profile.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "search/bounds.h"

namespace pw::search {
namespace {

double Work(const StageCost& c, bool split_backward) {
  return *c.forward + (split_backward ? *c.backward_input + *c.backward_weight : *c.backward);
}

// Sorted descending, so that comparing two vectors lexicographically
// compares the worst rank first, then the next: a plain max would leave the
// boundary search on a plateau whenever two ranks tie.
std::vector<double> Objective(const Placement& placement, const ModelProfile& profile, const StageBounds& bounds,
                              const CostModel& base, int m, bool split_backward) {
  const CostModel costs = WithStages(base, StageCostsFor(profile, bounds));
  std::vector<double> v = RankTimeBounds(placement, costs, m, split_backward);
  std::sort(v.begin(), v.end(), std::greater<>());
  return v;
}

bool Better(const std::vector<double>& a, const std::vector<double>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    const double tol = 1e-9 * std::max(1.0, std::abs(b[i]));
    if (a[i] < b[i] - tol) return true;
    if (a[i] > b[i] + tol) return false;
  }
  return false;
}

// The contiguous split of the layer works `w` into exactly `stages` parts
// with the least maximum part: bisection on the maximum with a greedy fill,
// then parts split until there are `stages` (splitting never raises it).
StageBounds MinMaxSplit(const std::vector<double>& w, int stages) {
  const int n = static_cast<int>(w.size());
  auto parts_needed = [&](double cap) {
    int parts = 1;
    double sum = 0;
    for (double x : w) {
      if (sum + x > cap && sum > 0) {
        ++parts;
        sum = 0;
      }
      sum += x;
    }
    return parts;
  };
  double lo = *std::max_element(w.begin(), w.end());
  double hi = std::accumulate(w.begin(), w.end(), 0.0);
  for (int it = 0; it < 60 && hi - lo > 1e-12 * std::max(1.0, hi); ++it) {
    const double mid = (lo + hi) / 2;
    (parts_needed(mid) <= stages ? hi : lo) = mid;
  }
  std::vector<int> cuts = {0};
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    if (sum + w[i] > hi * (1 + 1e-12) && sum > 0) {
      cuts.push_back(i);
      sum = 0;
    }
    sum += w[i];
  }
  cuts.push_back(n);
  while (static_cast<int>(cuts.size()) - 1 < stages) {
    // Split the part with the most layers (ties: the heaviest, then first).
    size_t best = 0;
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      const int len = cuts[k + 1] - cuts[k];
      const int best_len = cuts[best + 1] - cuts[best];
      if (len > best_len) best = k;
    }
    cuts.insert(cuts.begin() + best + 1, (cuts[best] + cuts[best + 1]) / 2);
  }
  return StageBounds(cuts.begin(), cuts.end());
}

}  // namespace

// CostModel::Resolve's rules in one place: a throwaway one-rank schedule
// with one stage per entry gives Resolve what it checks against.
Result<std::vector<StageCost>> ResolveCostEntries(const std::vector<StageCost>& entries) {
  CostModel tmp;
  tmp.stages = entries;
  std::vector<RankId> one_rank(entries.size(), 0);
  PW_ASSIGN_OR_RETURN(Placement placement, Placement::FromStageToRank(std::move(one_rank), 1));
  PW_RETURN_IF_ERROR(tmp.Resolve(MakeEmptySchedule("profile", std::move(placement), 1)));
  return tmp.stages;
}

Result<ModelProfile> MakeModelProfile(const CostModel& costs, int num_ranks, int num_layers) {
  if (num_ranks < 1) return Status::InvalidArgument("ranks must be at least 1, got " + std::to_string(num_ranks));
  if (costs.stages.empty()) return Status::InvalidArgument("the cost table has no stages");
  ModelProfile profile;
  profile.num_ranks = num_ranks;
  profile.layers = num_layers > 0;
  const size_t given = costs.stages.size();
  size_t pieces = given;
  if (num_layers > 0) {
    if (given != 1 && given != static_cast<size_t>(num_layers)) {
      return Status::InvalidArgument("--layers " + std::to_string(num_layers) + " needs a cost table with one entry (" +
                                     "uniform layers) or one per layer, but it has " + std::to_string(given) +
                                     " entries");
    }
    pieces = num_layers;
  } else if (given == 1) {
    pieces = num_ranks;
  }
  Result<std::vector<StageCost>> resolved = ResolveCostEntries(costs.stages);
  if (!resolved.ok()) return resolved.status().WithContext(num_layers > 0 ? "per-layer costs" : "stage costs");
  profile.pieces = given == 1 ? std::vector<StageCost>(pieces, resolved->front()) : std::move(*resolved);
  profile.memory_in_microbatches = std::all_of(profile.pieces.begin(), profile.pieces.end(),
                                               [](const StageCost& c) { return c.activation_bytes == 0; });
  if (profile.memory_in_microbatches) {
    for (StageCost& c : profile.pieces) c.activation_bytes = static_cast<double>(num_ranks) / pieces;
  }
  return profile;
}

Result<StageBounds> UniformBounds(const ModelProfile& profile, int num_stages) {
  const int k = profile.num_pieces();
  if (num_stages < 1) return Status::InvalidArgument("a split needs at least one stage");
  StageBounds b(num_stages + 1, 0.0);
  if (!profile.layers) {
    for (int s = 0; s <= num_stages; ++s) b[s] = static_cast<double>(k) * s / num_stages;
    return b;
  }
  if (num_stages > k) {
    return Status::InvalidArgument(std::to_string(num_stages) + " stages need at least as many layers, but --layers is " +
                                   std::to_string(k));
  }
  const int base = k / num_stages, extra = k % num_stages;
  // The `extra` layers go to the stages nearest the middle.
  const int first_extra = (num_stages - extra) / 2;
  for (int s = 0; s < num_stages; ++s) {
    const bool gets_extra = s >= first_extra && s < first_extra + extra;
    b[s + 1] = b[s] + base + (gets_extra ? 1 : 0);
  }
  return b;
}

std::vector<StageCost> StageCostsFor(const ModelProfile& profile, const StageBounds& bounds) {
  const int k = profile.num_pieces();
  std::vector<StageCost> out;
  out.reserve(bounds.size() - 1);
  for (size_t s = 0; s + 1 < bounds.size(); ++s) {
    const double a = bounds[s], b = bounds[s + 1];
    double f = 0, bw = 0, in = 0, wt = 0, act = 0, freed = 0, weight = 0;
    // Where a piece has recomputation's own times (a profile of a run that
    // recomputes), the stage sums them, taking the plain times of pieces
    // without.
    bool any_recompute = false, any_after = false;
    double re = 0, bw_after = 0, in_after = 0, wt_after = 0;
    for (int i = std::max(0, static_cast<int>(std::floor(a))); i < k && i < b; ++i) {
      const double overlap = std::min(b, i + 1.0) - std::max(a, static_cast<double>(i));
      if (overlap <= 0) continue;
      const StageCost& c = profile.pieces[i];
      f += overlap * *c.forward;
      bw += overlap * *c.backward;
      in += overlap * *c.backward_input;
      wt += overlap * *c.backward_weight;
      act += overlap * c.activation_bytes;
      any_recompute = any_recompute || c.recompute.has_value();
      any_after = any_after || c.HasBackwardAfterRecompute();
      re += overlap * c.recompute.value_or(*c.forward);
      bw_after += overlap * c.backward_after_recompute.value_or(*c.backward);
      in_after += overlap * c.backward_input_after_recompute.value_or(*c.backward_input);
      wt_after += overlap * c.backward_weight_after_recompute.value_or(*c.backward_weight);
      // Weighted by activations; by overlap when a piece holds none.
      const double wgt = c.activation_bytes > 0 ? overlap * c.activation_bytes : overlap * 1e-30;
      freed += wgt * c.freed_by_input;
      weight += wgt;
    }
    StageCost c;
    c.forward = f;
    c.backward = bw;
    c.backward_input = in;
    c.backward_weight = wt;
    if (any_recompute) c.recompute = re;
    if (any_after) {
      c.backward_after_recompute = bw_after;
      c.backward_input_after_recompute = in_after;
      c.backward_weight_after_recompute = wt_after;
    }
    c.activation_bytes = act;
    c.freed_by_input = weight > 0 ? std::clamp(freed / weight, 0.0, 1.0) : 0.5;
    const int last_piece = std::clamp(static_cast<int>(std::ceil(b)) - 1, 0, k - 1);
    c.output_bytes = profile.pieces[last_piece].output_bytes;
    out.push_back(c);
  }
  return out;
}

Result<StageBounds> BalancedBounds(const ModelProfile& profile, const Placement& placement, const CostModel& base,
                                   int num_microbatches, bool split_backward) {
  const int num_stages = placement.num_stages();
  PW_ASSIGN_OR_RETURN(StageBounds uniform, UniformBounds(profile, num_stages));
  if (!profile.layers) return uniform;
  std::vector<double> w;
  w.reserve(profile.pieces.size());
  for (const StageCost& c : profile.pieces) w.push_back(Work(c, split_backward));
  StageBounds best = MinMaxSplit(w, num_stages);
  std::vector<double> best_value = Objective(placement, profile, best, base, num_microbatches, split_backward);
  const std::vector<double> uniform_value =
      Objective(placement, profile, uniform, base, num_microbatches, split_backward);
  if (Better(uniform_value, best_value)) {
    best = uniform;
    best_value = uniform_value;
  }
  // Move one boundary by one layer at a time while the bound improves. Each
  // accepted move lowers the objective, so this ends; the cap keeps a
  // pathological profile from taking long.
  const int max_rounds = 8 * num_stages + 16;
  for (int round = 0; round < max_rounds; ++round) {
    bool improved = false;
    for (int i = 1; i < num_stages; ++i) {
      for (double step : {-1.0, 1.0}) {
        StageBounds trial = best;
        trial[i] += step;
        if (trial[i] <= trial[i - 1] || trial[i] >= trial[i + 1]) continue;
        std::vector<double> value = Objective(placement, profile, trial, base, num_microbatches, split_backward);
        if (Better(value, best_value)) {
          best = std::move(trial);
          best_value = std::move(value);
          improved = true;
        }
      }
    }
    if (!improved) break;
  }
  return best;
}

std::vector<int> LayersPerStage(const ModelProfile& profile, const StageBounds& bounds) {
  std::vector<int> out;
  if (!profile.layers) return out;
  for (size_t s = 0; s + 1 < bounds.size(); ++s) {
    out.push_back(static_cast<int>(std::lround(bounds[s + 1] - bounds[s])));
  }
  return out;
}

CostModel WithStages(const CostModel& base, std::vector<StageCost> stages) {
  CostModel out = base;
  out.stages = std::move(stages);
  return out;
}

}  // namespace pw::search
