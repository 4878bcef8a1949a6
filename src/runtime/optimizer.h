// The optimizer side of a training step: AdamW (decoupled weight decay,
// bias-corrected moments), the learning-rate schedule (linear warm-up, then
// cosine decay to min_lr), and gradient clipping by global norm.
//
// Clipping across a pipeline: each rank computes the squared norm of its own
// stages' gradients (SquaredGradNorm, accumulated in float64), the executor
// all-reduces the sum over the pipeline group (data-parallel replicas hold
// identical gradients after REDUCE_GRAD, so the pipeline group suffices),
// and every rank scales by ClipCoefficient of the global norm — the same
// coefficient single-process training computes.
//
// Thread-safety: an AdamW is used by one thread (the rank's executor).
// Failure: none at run time; LibTorch errors (c10::Error) propagate to the
// executor, which turns them into a Status.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "model/optimizer_state.h"  // OptimizerConfig, AdamWState

namespace pw {

// Learning rate of `step` (0-based): (step+1)/warmup · lr during warm-up, then
// cosine from lr to min_lr over the remaining steps. Pure.
double LearningRate(const OptimizerConfig& config, int64_t step);

// Sum of squares of every defined .grad of `params`, in float64. Pure.
double SquaredGradNorm(const std::vector<at::Tensor>& params);

// min(1, max_norm / (norm + 1e-6)), as torch.nn.utils.clip_grad_norm_; 1
// when max_norm <= 0.
double ClipCoefficient(double global_norm, double max_norm);

// Multiplies every defined .grad of `params` by `coefficient` (no-op at 1).
void ScaleGrads(const std::vector<at::Tensor>& params, double coefficient);

// AdamW over a fixed list of parameters (one stage's). Elementwise, so one
// optimizer per stage updates exactly as one over the whole model.
class AdamW {
 public:
  // With config.state set, adopts or registers the moments there (see
  // AdamWState) and starts at its initial_steps. Never fails.
  AdamW(std::vector<at::Tensor> params, const OptimizerConfig& config);

  // One update with learning rate `lr` from the current .grad (parameters
  // without a gradient are skipped). Does not zero the gradients.
  void Step(double lr);
  int64_t steps_taken() const { return step_; }

 private:
  std::vector<at::Tensor> params_;
  std::vector<at::Tensor> exp_avg_;
  std::vector<at::Tensor> exp_avg_sq_;
  OptimizerConfig config_;
  int64_t step_ = 0;
};

}  // namespace pw
