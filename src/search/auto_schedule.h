// ChooseScheduleBySimulation: `pipewright train --schedule auto`. Simulates
// every built-in family for the run's shape with costs estimated from the
// model (search/model_costs.h: forward FLOPs of each stage of the partition;
// B = 2F, I = W = F; activation bytes per microbatch of one sequence) and
// picks the shortest makespan, the smaller peak activation memory breaking
// ties. No LibTorch.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "model/model_config.h"

namespace pw {

struct ScheduleChoice {
  std::string family;                 // the winner, e.g. "zb-v"
  struct Candidate {
    std::string family;
    double makespan = 0;              // in units of the model's forward FLOPs
    double bubble_ratio = 0;
    double peak_activations = 0;      // max over ranks, bytes (static memory excluded)
  };
  std::vector<Candidate> candidates;  // every family that applies, best first
  std::string Describe() const;       // one line: winner and runner-up
};

// Pure. Fails only when no family applies to (pp, microbatches) or the model
// cannot be split into any family's stage count.
Result<ScheduleChoice> ChooseScheduleBySimulation(const ModelConfig& model, int pp, int microbatches,
                                                  const std::string& layers_per_stage);

}  // namespace pw
