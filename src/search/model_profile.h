// ModelProfile: the model as the planner sees it — a sequence of pieces
// (the user's layers, or the stages of the user's cost table) with resolved
// costs — and how a choice of stage boundaries turns it into the per-stage
// cost table that the compiler and the simulator take.
//
// Why pieces: a cost table describes the model at one stage count, but the
// planner also tries interleaved (v*p stages) and V-shape (2p) placements.
// A virtual stage covering [a, b) in piece units gets the integral of the
// piece costs over [a, b): with v chunks per rank each chunk does 1/v of
// the rank's work, as `schedule compare` charges. With --layers the pieces
// are whole layers and stage boundaries fall between layers; the planner
// then chooses them (BalancedBoundaries).
//
// Every function here is pure and may be called concurrently.
#pragma once

#include <vector>

#include "core/status.h"
#include "schedule/placement.h"
#include "sim/cost_model.h"

namespace pw::search {

struct ModelProfile {
  // Resolved costs (forward, backward, backward_input, backward_weight set).
  std::vector<StageCost> pieces;
  // True when the pieces are layers: stages are runs of whole pieces.
  bool layers = false;
  // True when no activation bytes were given: each piece then holds
  // ranks / pieces, so memory reads in microbatches of one rank's share.
  bool memory_in_microbatches = false;
  int num_ranks = 1;
  int num_pieces() const { return static_cast<int>(pieces.size()); }
};

// Stage boundaries in piece units: S+1 increasing positions from 0 to the
// number of pieces (integers when the pieces are layers).
using StageBounds = std::vector<double>;

// The profile of `costs` for `num_ranks` ranks. num_layers == 0: the cost
// table describes stages (one entry: p equal stages; K entries: K pieces).
// num_layers > 0: the table is per layer (one entry for all, or one per
// layer). Fails with InvalidArgument when the table's length fits neither,
// or when a time is negative or I/W are half given.
Result<ModelProfile> MakeModelProfile(const CostModel& costs, int num_ranks, int num_layers);

// Equal boundaries: piece units / S each; with layers, whole layers, the
// remainder going to the middle stages (the ends often carry embedding and
// head). Fails when there are more stages than layers.
Result<StageBounds> UniformBounds(const ModelProfile& profile, int num_stages);

// One resolved cost entry per stage of `bounds`: times and activation bytes
// are integrals over the covered pieces, output_bytes is that of the piece
// the stage ends in, freed_by_input the activation-weighted mean.
std::vector<StageCost> StageCostsFor(const ModelProfile& profile, const StageBounds& bounds);

// Layers only: boundaries for `placement` that minimise the placement's
// time lower bound (search/bounds.h) for m microbatches: starts from the
// contiguous split with the least maximum stage work, then moves single
// boundaries while the bound drops. `base` supplies comm and static memory.
// Deterministic. Fails like UniformBounds.
Result<StageBounds> BalancedBounds(const ModelProfile& profile, const Placement& placement,
                                   const CostModel& base, int num_microbatches, bool split_backward);

// Layers per stage, for reports ("4,4,5,3"); empty unless profile.layers.
std::vector<int> LayersPerStage(const ModelProfile& profile, const StageBounds& bounds);

// `entries` with unset times filled by CostModel::Resolve's rules (B = I + W,
// I = W = B / 2, F = 1 and B = 2 when nothing is given). InvalidArgument
// for a negative time or I/W half given.
Result<std::vector<StageCost>> ResolveCostEntries(const std::vector<StageCost>& entries);

// A copy of `base` (comm, static memory, kind costs, cap) with `stages`.
CostModel WithStages(const CostModel& base, std::vector<StageCost> stages);

}  // namespace pw::search
