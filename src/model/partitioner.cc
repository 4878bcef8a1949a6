#include "model/partitioner.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "core/text.h"

namespace pw {
namespace {

// Unit costs in model order: embedding, blocks..., head.
std::vector<double> UnitCosts(const LayerCosts& costs) {
  std::vector<double> units;
  units.reserve(costs.blocks.size() + 2);
  units.push_back(costs.embedding);
  units.insert(units.end(), costs.blocks.begin(), costs.blocks.end());
  units.push_back(costs.head);
  return units;
}

// Builds the partition from unit boundaries: stage s holds units
// [bounds[s], bounds[s + 1]).
ModelPartition FromUnitBounds(const ModelConfig& config, const std::vector<int>& bounds,
                              const std::vector<double>& units) {
  const int n = config.n_layers;
  ModelPartition partition;
  const int num_stages = static_cast<int>(bounds.size()) - 1;
  for (int s = 0; s < num_stages; ++s) {
    StageSpan span;
    span.stage = s;
    const int lo = bounds[s], hi = bounds[s + 1];  // units, hi exclusive
    span.has_embedding = lo == 0;
    span.has_head = hi == n + 2;
    // Blocks are units 1..n; block b is unit b + 1.
    const int first_unit_block = std::max(lo, 1), end_unit_block = std::min(hi, n + 1);
    span.first_block = first_unit_block - 1;
    span.num_blocks = std::max(0, end_unit_block - first_unit_block);
    for (int u = lo; u < hi; ++u) span.cost += units[u];
    partition.stages.push_back(span);
  }
  return partition;
}

}  // namespace

LayerCosts EstimateLayerCosts(const ModelConfig& c) {
  const double t = c.seq_len, d = c.d_model, v = c.vocab_size, h = c.ffn_width();
  const double qkv = c.qkv_width(), up = c.mlp_up_width();
  LayerCosts costs;
  costs.embedding = 2 * t * d;
  const double block = 2 * t * d * qkv      // q, k, v
                       + 2 * t * t * d      // scores q·kᵀ
                       + 2 * t * t * d      // weights·v
                       + 2 * t * d * d      // attention output projection
                       + 2 * t * d * up     // MLP up (and gate)
                       + 2 * t * h * d;     // MLP down
  costs.blocks.assign(std::max(c.n_layers, 0), block);
  costs.head = 2 * t * d * v + 3 * t * v;
  return costs;
}

double ModelPartition::Imbalance() const {
  if (stages.empty()) return 1.0;
  double max_cost = 0, total = 0;
  for (const StageSpan& s : stages) max_cost = std::max(max_cost, s.cost), total += s.cost;
  return total > 0 ? max_cost / (total / stages.size()) : 1.0;
}

std::string ModelPartition::BlocksPerStageString() const {
  std::string out;
  for (const StageSpan& s : stages) {
    if (!out.empty()) out += ",";
    out += std::to_string(s.num_blocks);
  }
  return out;
}

Result<std::vector<int>> ParseLayersPerStage(std::string_view text) {
  std::vector<int> counts;
  if (TrimSpaces(text).empty()) {
    return Status::InvalidArgument("layers per stage is empty; expected a list such as 2,3,3");
  }
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view item = TrimSpaces(text.substr(start, comma == std::string_view::npos
                                                         ? std::string_view::npos
                                                         : comma - start));
    int value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size()) {
      return Status::InvalidArgument("layers per stage '" + std::string(text) + "': entry '" +
                                     std::string(item) +
                                     "' is not an integer; expected a list such as 2,3,3");
    }
    if (value < 0) {
      return Status::InvalidArgument("layers per stage '" + std::string(text) + "': entry " +
                                     std::to_string(value) + " is negative");
    }
    counts.push_back(value);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return counts;
}

Result<ModelPartition> PartitionBalanced(const ModelConfig& config, int num_stages) {
  PW_RETURN_IF_ERROR(ValidateModelConfig(config));
  const int n = config.n_layers, num_units = n + 2;
  if (num_stages < 1) {
    return Status::FailedPrecondition("the number of virtual stages must be >= 1, got " +
                                      std::to_string(num_stages));
  }
  if (num_stages > num_units) {
    return Status::FailedPrecondition(
        "cannot split a model with model.n_layers = " + std::to_string(n) + " into " +
        std::to_string(num_stages) + " virtual stages: each stage needs at least one unit of " +
        std::to_string(num_units) + " (embedding, " + std::to_string(n) +
        " blocks, head); use at most " + std::to_string(num_units) +
        " stages (pp × chunks) or raise model.n_layers");
  }
  const std::vector<double> units = UnitCosts(EstimateLayerCosts(config));
  std::vector<double> prefix(num_units + 1, 0.0);
  for (int u = 0; u < num_units; ++u) prefix[u + 1] = prefix[u] + units[u];
  auto range = [&](int lo, int hi) { return prefix[hi] - prefix[lo]; };

  // best[k][i]: the best split of units [0, i) into k stages, compared as
  // (max stage cost, sum of squared stage costs); cut[k][i] is its last cut.
  struct Score {
    double max_cost = std::numeric_limits<double>::infinity();
    double sum_squares = std::numeric_limits<double>::infinity();
  };
  auto better = [](const Score& a, const Score& b) {
    // Relative epsilon so that float round-off does not pick between equal splits.
    const double eps = 1e-12 * std::max(std::abs(a.max_cost), std::abs(b.max_cost));
    if (a.max_cost < b.max_cost - eps) return true;
    if (a.max_cost > b.max_cost + eps) return false;
    const double eps2 = 1e-12 * std::max(std::abs(a.sum_squares), std::abs(b.sum_squares));
    return a.sum_squares < b.sum_squares - eps2;
  };
  std::vector<std::vector<Score>> best(num_stages + 1, std::vector<Score>(num_units + 1));
  std::vector<std::vector<int>> cut(num_stages + 1, std::vector<int>(num_units + 1, -1));
  best[0][0] = Score{0.0, 0.0};
  for (int k = 1; k <= num_stages; ++k) {
    // Units [0, i) into k stages needs i >= k, and leaves >= num_stages - k units after.
    for (int i = k; i <= num_units - (num_stages - k); ++i) {
      for (int j = k - 1; j < i; ++j) {
        if (cut[k - 1][j] < 0 && !(k - 1 == 0 && j == 0)) continue;
        const double c = range(j, i);
        Score candidate{std::max(best[k - 1][j].max_cost, c), best[k - 1][j].sum_squares + c * c};
        if (cut[k][i] < 0 || better(candidate, best[k][i])) {
          best[k][i] = candidate;
          cut[k][i] = j;
        }
      }
    }
  }
  PW_CHECK(cut[num_stages][num_units] >= 0, "balanced partition found no split");
  std::vector<int> bounds(num_stages + 1);
  bounds[num_stages] = num_units;
  for (int k = num_stages, i = num_units; k > 0; --k) {
    i = cut[k][i];
    bounds[k - 1] = i;
  }
  return FromUnitBounds(config, bounds, units);
}

Result<ModelPartition> PartitionExplicit(const ModelConfig& config,
                                         std::span<const int> blocks_per_stage) {
  PW_RETURN_IF_ERROR(ValidateModelConfig(config));
  const int n = config.n_layers;
  const int num_stages = static_cast<int>(blocks_per_stage.size());
  std::string listed;
  for (int count : blocks_per_stage) listed += (listed.empty() ? "" : ",") + std::to_string(count);
  if (num_stages < 1) {
    return Status::FailedPrecondition("layers per stage lists no stage; expected e.g. 2,3,3");
  }
  long long sum = 0;
  for (int s = 0; s < num_stages; ++s) {
    const int count = blocks_per_stage[s];
    if (count < 0) {
      return Status::FailedPrecondition("layers per stage " + listed + ": stage " +
                                        std::to_string(s) + " has a negative count");
    }
    const bool first = s == 0, last = s == num_stages - 1;
    if (count == 0 && !first && !last) {
      return Status::FailedPrecondition(
          "layers per stage " + listed + ": stage " + std::to_string(s) +
          " would be empty; only the first stage (embedding) and the last (head) may hold "
          "zero blocks");
    }
    sum += count;
  }
  if (sum != n) {
    return Status::FailedPrecondition("layers per stage " + listed + " sum to " +
                                      std::to_string(sum) + " blocks but model.n_layers is " +
                                      std::to_string(n) + "; the counts must sum to n_layers");
  }
  std::vector<int> bounds(num_stages + 1);
  bounds[0] = 0;
  int block_end = 0;
  for (int s = 0; s < num_stages; ++s) {
    block_end += blocks_per_stage[s];
    // Stage s ends after block block_end - 1, i.e. at unit block_end + 1
    // (unit 0 is the embedding); the last stage also takes the head.
    bounds[s + 1] = s == num_stages - 1 ? n + 2 : block_end + 1;
  }
  return FromUnitBounds(config, bounds, UnitCosts(EstimateLayerCosts(config)));
}

Result<ModelPartition> PartitionModel(const ModelConfig& config, int num_stages,
                                      std::string_view layers_per_stage) {
  std::string_view spec = TrimSpaces(layers_per_stage);
  if (spec.empty() || spec == "balanced" || spec == "auto") return PartitionBalanced(config, num_stages);
  PW_ASSIGN_OR_RETURN(std::vector<int> counts, ParseLayersPerStage(spec));
  if (static_cast<int>(counts.size()) != num_stages) {
    return Status::FailedPrecondition(
        "layers per stage '" + std::string(spec) + "' lists " + std::to_string(counts.size()) +
        " stages but the pipeline has " + std::to_string(num_stages) +
        " virtual stages (pp × chunks); give one count per stage");
  }
  return PartitionExplicit(config, counts);
}

}  // namespace pw
