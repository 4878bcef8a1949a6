// `pipewright train --schedule auto` (and `--layers-per-stage auto`):
// simulates every built-in family for the run's shape and picks the
// shortest makespan.
//
// ChooseScheduleByMeasurement is what train uses: stage costs are sums of
// the model's units as calibration measured them on this machine
// (search/measured_split.h), and each family gets the stage boundaries that
// minimise its own simulated makespan unless the job fixes them. Messages
// cost what `base` says (the launcher measures a loopback link with idle
// cores, which understates what a message costs a busy rank) and there is
// no per-action overhead yet; both grow with the number of virtual stages
// (every stage boundary that crosses ranks is one more message per
// microbatch each way), so makespans within 3 % of the shortest (also the
// calibration's run-to-run spread) count as equal and then the family with
// fewer virtual stages wins, then the one holding less activation memory,
// then the shorter.
//
// ChooseScheduleBySimulation is the fallback when calibration fails: costs
// estimated from the model (search/model_costs.h: forward FLOPs of each
// stage of the partition; B = 2F, I = W = F; activation bytes per
// microbatch of one sequence), the smaller peak activation memory breaking
// ties. No LibTorch.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "model/model_config.h"
#include "search/model_profile.h"
#include "sim/cost_model.h"

namespace pw {

struct ScheduleChoice {
  std::string family;                 // the winner, e.g. "zb-v"
  std::string layers_per_stage;       // measured: the winner's blocks per stage; analytic: empty
  bool measured = false;              // makespans in ms (measured) or forward FLOPs (analytic)
  struct Candidate {
    std::string family;
    double makespan = 0;              // ms per step (measured) or forward FLOPs (analytic)
    double bubble_ratio = 0;
    double peak_activations = 0;      // max over ranks, bytes (static memory excluded)
    std::string layers_per_stage;     // measured: the split simulated
    int num_stages = 0;
    bool split_backward = false;      // runs I and W (Schedule::UsesSplitBackward)
  };
  std::vector<Candidate> candidates;  // every family that applies, best first
  // One line: winner and runner-up, e.g. (measured) "zb-h1 2.41 s/step
  // (blocks per stage 4,4, simulated bubble 5.0%), runner-up 1f1b 2.52".
  std::string Describe() const;
  // When `units` (measured, MeasuredUnitProfile) price a block's split
  // backward (I + W) above its fused B and the winner runs the fused one:
  // "; split backward costs 1.08x the fused one here: fused 1f1b chosen".
  // "" otherwise. Zero-bubble schedules only pay off where I + W is close
  // to B; a user comparing families wants to know why none was chosen.
  std::string SplitBackwardNote(const search::ModelProfile& units) const;
};

// Pure. Fails only when no family applies to (pp, microbatches) or the model
// cannot be split into any family's stage count.
Result<ScheduleChoice> ChooseScheduleBySimulation(const ModelConfig& model, int pp, int microbatches,
                                                  const std::string& layers_per_stage);

// `units`: MeasuredUnitProfile of `model` (ms). `layers_per_stage` empty or
// "auto": each family's best split (BestSplitBySimulation, also trying the
// analytic balanced partition); "balanced" or a list: that partition, and
// families whose stage count it does not fit are left out. `base`: what is
// not per stage (measured comm, per-action kind costs), as SimulateSplit
// takes it. Pure. Fails like ChooseScheduleBySimulation.
Result<ScheduleChoice> ChooseScheduleByMeasurement(const ModelConfig& model, int pp, int microbatches,
                                                   const std::string& layers_per_stage,
                                                   const search::ModelProfile& units, const CostModel& base = {});

}  // namespace pw
