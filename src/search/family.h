// A family of candidate schedules: what the planner fixes before it chooses
// an order — the placement (sequential, interleaved with v chunks, V-shape,
// each possibly over a reordered list of ranks), fused or split backward,
// and (with --layers) the stage boundaries — with the per-stage cost table
// that follows and the family's lower bounds.
// Everything in a family shares one bound (search/bounds.h), which is what
// lets the planner skip whole families.
//
// Pure functions; safe to call concurrently.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "dsl/pipe_program.h"
#include "schedule/placement.h"
#include "search/bounds.h"
#include "search/model_profile.h"
#include "sim/cost_model.h"

namespace pw::search {

struct Family {
  dsl::PlacementSpec placement_spec;
  Placement placement;
  bool split_backward = false;
  // Activation recomputation on every stage: each F's activations are
  // dropped after it (DROP) and rebuilt before its backward (RECOMPUTE,
  // costing another F): less memory for more time.
  bool recompute = false;
  // Activation offload on every stage: each F's activations go to host
  // memory after it (OFFLOAD) and come back before its backward (RELOAD),
  // each taking the bytes / the cost model's host link.
  bool offload = false;
  bool balanced = false;             // layers only: BalancedBounds, else uniform
  // Non-empty when the placement's style runs over the ranks in this order
  // (position i of the pipeline on rank rank_order[i]); placement_spec is
  // then explicit. See RankOrders.
  std::vector<RankId> rank_order;
  std::string style_name;            // with rank_order: the style run over it ("sequential")
  StageBounds bounds;
  std::vector<int> layers_per_stage;  // empty without --layers
  CostModel costs;                   // one resolved entry per stage
  FamilyBounds lower;

  int num_stages() const { return placement.num_stages(); }
  int chunks() const { return placement.num_stages() / placement.num_ranks(); }
  // "interleaved v=3, split I+W, layers 5,4,4,5 (balanced)".
  std::string Describe() const;
  // "sequential", "interleaved v=3", "v-shape"; "sequential over ranks
  // 0,2,1,3 (sites together)" with a rank order.
  std::string PlacementName() const;
};

// Which families the planner may try.
struct SpaceOptions {
  int max_chunks = 4;         // interleaved v = 2 .. max_chunks (0 or 1: none)
  bool sequential = true;
  bool vshape = true;
  bool fused_backward = true;
  bool split_backward = true;
  // Also every family with recomputation; the planner tries them only
  // under a memory cap (without one they are never faster).
  bool recompute = true;
  // Also every family with offload; the planner tries them only under a
  // memory cap with a priced host link (--host-bandwidth and activation
  // bytes): without one, moving the activations would look free.
  bool offload = true;
  bool builtins = true;       // evaluate the built-in generators as seeds
  bool policies = true;       // search compiled .pipe policies
};

// One family. With `balanced` and layers, boundaries come from
// BalancedBounds; otherwise UniformBounds. Fails when the placement needs
// more stages than there are layers.
Result<Family> MakeFamily(const ModelProfile& profile, const CostModel& base, const dsl::PlacementSpec& spec,
                          bool split_backward, bool balanced, int num_microbatches);

// The orders of ranks worth trying on `cluster` besides 0..p-1: with sites numbered apart (e.g. sites 0+2, 1+3), the ranks of each
// site together, so that a sequential pipeline crosses between sites once
// per site boundary instead of at every step. Empty on a uniform cluster or
// when 0..p-1 already keeps sites together.
std::vector<std::vector<RankId>> RankOrders(const Cluster& cluster, int num_ranks);

// `spec` (sequential, interleaved, V-shape) run over `order`: stage s goes
// to order[rank of s under spec], as an explicit spec.
Result<dsl::PlacementSpec> ReorderedSpec(const dsl::PlacementSpec& spec, const std::vector<RankId>& order);

// Every family `options` allows, skipping those that cannot be built (more
// stages than layers) and duplicates (a balanced split equal to the uniform
// one). Order: placements as listed in SpaceOptions, fused before split,
// uniform before balanced; then the same over each of RankOrders; then,
// with options.recompute, every family again with recompute set; then, with
// options.offload, with offload set.
std::vector<Family> EnumerateFamilies(const ModelProfile& profile, const CostModel& base, int num_microbatches,
                                      const SpaceOptions& options);

// The Placement a spec describes for `ranks` (explicit specs as given).
Result<Placement> PlacementFromSpec(const dsl::PlacementSpec& spec, int ranks);

}  // namespace pw::search
