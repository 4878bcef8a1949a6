// Measured unit costs and the stage split they favour. The runtime's
// partitioner (model/partitioner.h) sees a GPT-style model as n_layers + 2
// units — the embedding, the blocks, the head — and a stage holds a
// contiguous run of them. Calibration (runtime/calibrate.h) times one of
// each kind on this machine; MeasuredUnitProfile turns those timings into a
// ModelProfile over the units (search/model_profile.h), so that any split
// the partitioner admits, including a first stage with the embedding alone
// or a last stage with the head alone, can be costed by summing units.
//
// Why units rather than the n_layers "layers" of a training profile
// (search/layer_split.h, which folds the embedding into layer 0 and the
// head into the last layer): calibration measures the three kinds apart, so
// nothing has to be shared out by FLOP estimates, and the split space is
// exactly the partitioner's (interleaved and V-shape schedules may need up
// to n_layers + 2 stages).
//
// BestSplitBySimulation picks the boundaries for one schedule by the
// simulator's makespan itself, not by a bound: it starts from the profile's
// balanced bounds (BalancedBounds) and from any given starts, then moves
// single boundaries by one unit while the simulated makespan drops.
//
// Pure, no LibTorch; every function may be called concurrently.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "model/model_config.h"
#include "model/partitioner.h"
#include "schedule/schedule.h"
#include "search/model_profile.h"
#include "sim/cost_model.h"

namespace pw::search {

// Times of one microbatch (the job's size) through one unit of each kind,
// in milliseconds: F and I, W set; B set where measured (else I + W).
struct UnitTimings {
  StageCost embedding, block, head;
};

// "block F 31.2, I 33.0, W 30.1, B 62.5 ms; head F 3.1, B 6.0 ms" (times
// unset are left out).
std::string DescribeUnitTimings(const UnitTimings& timings);

// The model's units [embedding, block 0 .. block n-1, head] as a profile
// (profile.layers = true: stages are runs of whole units) with the measured
// times, and bytes from the estimates of search/model_costs.h for
// `microbatch_size` sequences: activation_bytes per unit, output_bytes of a
// hidden state ([b, T, d] float32) for every unit but the head (a scalar
// loss). InvalidArgument for a negative time or I/W half given.
Result<ModelProfile> MeasuredUnitProfile(const ModelConfig& model, const UnitTimings& timings, int microbatch_size);

// Unit bounds (integers from 0 to n_layers + 2, one more than the stages)
// as blocks per stage, "0,4,4", which PartitionModel reads back; and the
// unit bounds of a partition.
std::string BlocksPerStage(const StageBounds& unit_bounds, int n_layers);
StageBounds UnitBoundsOf(const ModelPartition& partition);

struct SplitOutcome {
  StageBounds bounds;        // unit bounds
  std::string blocks_per_stage;
  double makespan = 0;       // the profile's time unit (ms)
  double bubble_ratio = 0;
  double peak_activations = 0;  // max over ranks, bytes
};

// Simulates `schedule` with stage costs summed over `bounds` (unit bounds,
// one stage per schedule stage). `base` supplies what is not per stage
// (comm latency and bandwidth, kind costs such as a measured per-action
// overhead; its stages and static memory are ignored). Fails when the
// bounds do not fit the schedule or the simulation fails.
Result<SplitOutcome> SimulateSplit(const ModelProfile& units, int n_layers, const Schedule& schedule,
                                   const StageBounds& bounds, const CostModel& base = {});

// The unit bounds for `schedule` with the least simulated makespan, by the
// search above from BalancedBounds and `starts` (each must have
// num_stages + 1 entries; others are ignored). Deterministic. Fails when the
// model has fewer units than the schedule has stages.
Result<SplitOutcome> BestSplitBySimulation(const ModelProfile& units, int n_layers, const Schedule& schedule,
                                           const std::vector<StageBounds>& starts = {}, const CostModel& base = {});

}  // namespace pw::search
