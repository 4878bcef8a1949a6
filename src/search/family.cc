#include "search/family.h"

#include <algorithm>

namespace pw::search {

std::string Family::PlacementName() const {
  switch (placement_spec.style) {
    case dsl::PlacementStyle::kSequential: return "sequential";
    case dsl::PlacementStyle::kInterleaved: return "interleaved v=" + std::to_string(chunks());
    case dsl::PlacementStyle::kVShape: return "v-shape";
    case dsl::PlacementStyle::kExplicit: return "custom";
  }
  return "custom";
}

std::string Family::Describe() const {
  std::string out = PlacementName() + (split_backward ? ", split I+W" : ", fused B");
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

std::vector<Family> EnumerateFamilies(const ModelProfile& profile, const CostModel& base, int num_microbatches,
                                      const SpaceOptions& options) {
  std::vector<dsl::PlacementSpec> specs;
  if (options.sequential) specs.push_back({.style = dsl::PlacementStyle::kSequential});
  for (int v = 2; v <= options.max_chunks; ++v) {
    specs.push_back({.style = dsl::PlacementStyle::kInterleaved, .chunks = v});
  }
  if (options.vshape) specs.push_back({.style = dsl::PlacementStyle::kVShape});
  std::vector<Family> out;
  for (const dsl::PlacementSpec& spec : specs) {
    for (bool split : {false, true}) {
      if (split ? !options.split_backward : !options.fused_backward) continue;
      for (bool balanced : {false, true}) {
        if (balanced && !profile.layers) continue;
        Result<Family> f = MakeFamily(profile, base, spec, split, balanced, num_microbatches);
        if (!f.ok()) continue;  // more stages than layers: this placement does not apply
        if (balanced && !out.empty() && out.back().bounds == f->bounds &&
            out.back().placement == f->placement && out.back().split_backward == split) {
          continue;  // the uniform split is already the balanced one
        }
        out.push_back(std::move(*f));
      }
    }
  }
  return out;
}

}  // namespace pw::search
