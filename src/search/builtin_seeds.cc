#include "search/builtin_seeds.h"

#include <algorithm>

#include "schedule/generators.h"

namespace pw::search {

std::string BuiltinSeed::Label() const {
  return chunks > 0 ? family + " v=" + std::to_string(chunks) : family;
}

std::vector<BuiltinSeed> BuiltinSeeds(int max_chunks) {
  std::vector<BuiltinSeed> out;
  for (const ScheduleFamily& f : BuiltinScheduleFamilies()) {
    const std::string name(f.name);
    if (name == "interleaved-1f1b" || name == "looped-bfs") {
      // Both accept any v; the planner's placements go up to max_chunks, and
      // the comparison is fair only if the built-ins may use them too.
      for (int v = 2; v <= std::max(2, max_chunks); ++v) out.push_back({name, v});
    } else {
      out.push_back({name, 0});
    }
  }
  return out;
}

dsl::PlacementSpec PlacementSpecOf(const Schedule& schedule) {
  const Placement& pl = schedule.placement;
  const std::string shape = pl.Describe();
  dsl::PlacementSpec spec;
  if (shape == "sequential") {
    spec.style = dsl::PlacementStyle::kSequential;
  } else if (shape == "interleaved") {
    spec.style = dsl::PlacementStyle::kInterleaved;
    spec.chunks = pl.num_stages() / pl.num_ranks();
  } else if (shape == "v-shape") {
    spec.style = dsl::PlacementStyle::kVShape;
  } else {
    spec.style = dsl::PlacementStyle::kExplicit;
    spec.stage_to_rank = pl.stage_to_rank();
  }
  return spec;
}

dsl::PipeProgram PinnedProgram(const Schedule& schedule, std::string name) {
  dsl::PipeProgram program;
  program.name = std::move(name);
  program.ranks = schedule.num_ranks();
  program.microbatches = schedule.num_microbatches;
  program.placement = PlacementSpecOf(schedule);
  program.split_backward = schedule.UsesSplitBackward();
  if (program.split_backward) {
    program.policy.kind_priority = {ActionKind::kBackwardInput, ActionKind::kForward, ActionKind::kBackwardWeight};
  }
  for (RankId r = 0; r < schedule.num_ranks(); ++r) {
    program.pinned[r] = dsl::PinnedSequence{schedule.programs[r], /*prefix_only=*/false, {}};
  }
  return program;
}

}  // namespace pw::search
