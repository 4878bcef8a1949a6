#include "search/family.h"

#include <algorithm>

namespace pw::search {

namespace {

std::string StyleName(const dsl::PlacementSpec& spec, int chunks) {
  switch (spec.style) {
    case dsl::PlacementStyle::kSequential: return "sequential";
    case dsl::PlacementStyle::kInterleaved: return "interleaved v=" + std::to_string(chunks);
    case dsl::PlacementStyle::kVShape: return "v-shape";
    case dsl::PlacementStyle::kExplicit: return "custom";
  }
  return "custom";
}

}  // namespace

std::string Family::PlacementName() const {
  if (rank_order.empty()) return StyleName(placement_spec, chunks());
  std::string ranks;
  for (size_t i = 0; i < rank_order.size(); ++i) ranks += (i ? "," : "") + std::to_string(rank_order[i]);
  return style_name + " over ranks " + ranks;
}

std::vector<std::vector<RankId>> RankOrders(const Cluster& cluster, int num_ranks) {
  std::vector<std::vector<RankId>> orders;
  if (!cluster.has_sites() || cluster.site_of_rank.size() != static_cast<size_t>(num_ranks)) return orders;
  std::vector<RankId> by_site(num_ranks);
  for (int r = 0; r < num_ranks; ++r) by_site[r] = r;
  std::stable_sort(by_site.begin(), by_site.end(),
                   [&](RankId a, RankId b) { return cluster.site_of_rank[a] < cluster.site_of_rank[b]; });
  // Already together when each site's ranks are consecutive in 0..p-1.
  bool together = true;
  for (int r = 1; r < num_ranks; ++r) {
    together = together && cluster.site_of_rank[r] >= cluster.site_of_rank[r - 1];
  }
  if (!together) orders.push_back(by_site);
  return orders;
}

Result<dsl::PlacementSpec> ReorderedSpec(const dsl::PlacementSpec& spec, const std::vector<RankId>& order) {
  PW_ASSIGN_OR_RETURN(Placement base, PlacementFromSpec(spec, static_cast<int>(order.size())));
  dsl::PlacementSpec out;
  out.style = dsl::PlacementStyle::kExplicit;
  for (RankId r : base.stage_to_rank()) out.stage_to_rank.push_back(order[r]);
  return out;
}

std::string Family::Describe() const {
  std::string out = PlacementName() + (split_backward ? ", split I+W" : ", fused B");
  if (recompute) out += ", recompute";
  if (offload) out += ", offload";
  if (!layers_per_stage.empty()) {
    out += ", layers ";
    for (size_t s = 0; s < layers_per_stage.size(); ++s) {
      out += (s ? "," : "") + std::to_string(layers_per_stage[s]);
    }
    out += balanced ? " (balanced)" : " (uniform)";
  }
  return out;
}

Result<Placement> PlacementFromSpec(const dsl::PlacementSpec& spec, int ranks) {
  switch (spec.style) {
    case dsl::PlacementStyle::kSequential: return Placement::Sequential(ranks);
    case dsl::PlacementStyle::kInterleaved: return Placement::Interleaved(ranks, spec.chunks);
    case dsl::PlacementStyle::kVShape: return Placement::VShape(ranks);
    case dsl::PlacementStyle::kExplicit: return Placement::FromStageToRank(spec.stage_to_rank, ranks);
  }
  return Status::Internal("unknown placement style");
}

Result<Family> MakeFamily(const ModelProfile& profile, const CostModel& base, const dsl::PlacementSpec& spec,
                          bool split_backward, bool balanced, int num_microbatches) {
  Family f;
  f.placement_spec = spec;
  PW_ASSIGN_OR_RETURN(f.placement, PlacementFromSpec(spec, profile.num_ranks));
  f.split_backward = split_backward;
  f.balanced = balanced && profile.layers;
  if (f.balanced) {
    PW_ASSIGN_OR_RETURN(f.bounds, BalancedBounds(profile, f.placement, base, num_microbatches, split_backward));
  } else {
    PW_ASSIGN_OR_RETURN(f.bounds, UniformBounds(profile, f.placement.num_stages()));
  }
  f.layers_per_stage = LayersPerStage(profile, f.bounds);
  f.costs = WithStages(base, StageCostsFor(profile, f.bounds));
  f.lower = ComputeBounds(f.placement, f.costs, num_microbatches, split_backward);
  return f;
}

namespace {

// The families of one placement style over one rank order (empty: 0..p-1).
void AddFamilies(const ModelProfile& profile, const CostModel& base, const dsl::PlacementSpec& style,
                 const std::vector<RankId>& order, int num_microbatches, const SpaceOptions& options,
                 std::vector<Family>& out) {
  dsl::PlacementSpec spec = style;
  if (!order.empty()) {
    Result<dsl::PlacementSpec> reordered = ReorderedSpec(style, order);
    if (!reordered.ok()) return;
    spec = std::move(*reordered);
  }
  for (bool split : {false, true}) {
    if (split ? !options.split_backward : !options.fused_backward) continue;
    for (bool balanced : {false, true}) {
      if (balanced && !profile.layers) continue;
      Result<Family> f = MakeFamily(profile, base, spec, split, balanced, num_microbatches);
      if (!f.ok()) continue;  // more stages than layers: this placement does not apply
      if (!order.empty()) {
        f->rank_order = order;
        f->style_name = StyleName(style, f->chunks());
      }
      if (balanced && !out.empty() && out.back().bounds == f->bounds && out.back().placement == f->placement &&
          out.back().split_backward == split) {
        continue;  // the uniform split is already the balanced one
      }
      out.push_back(std::move(*f));
    }
  }
}

}  // namespace

std::vector<Family> EnumerateFamilies(const ModelProfile& profile, const CostModel& base, int num_microbatches,
                                      const SpaceOptions& options) {
  std::vector<dsl::PlacementSpec> specs;
  if (options.sequential) specs.push_back({.style = dsl::PlacementStyle::kSequential});
  for (int v = 2; v <= options.max_chunks; ++v) {
    specs.push_back({.style = dsl::PlacementStyle::kInterleaved, .chunks = v});
  }
  if (options.vshape) specs.push_back({.style = dsl::PlacementStyle::kVShape});
  std::vector<std::vector<RankId>> orders = {{}};  // {}: 0..p-1
  for (std::vector<RankId>& order : RankOrders(base.cluster, profile.num_ranks)) orders.push_back(std::move(order));
  std::vector<Family> out;
  for (const std::vector<RankId>& order : orders) {
    for (const dsl::PlacementSpec& style : specs) {
      AddFamilies(profile, base, style, order, num_microbatches, options, out);
    }
  }
  const size_t plain = out.size();
  if (options.recompute) {
    for (size_t i = 0; i < plain; ++i) {
      Family f = out[i];
      f.recompute = true;
      out.push_back(std::move(f));
    }
  }
  if (options.offload) {
    for (size_t i = 0; i < plain; ++i) {
      Family f = out[i];
      f.offload = true;
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace pw::search
