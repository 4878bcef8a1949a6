// The optimizer's plain data: AdamW hyperparameters (OptimizerConfig) and
// the moments that outlive the optimizer objects (AdamWState). They live
// below runtime/ because checkpoints (model/checkpoint.h) save and restore
// them and inference reads checkpoints without the training runtime; the
// optimizer itself (runtime/optimizer.h) uses them.
//
// Thread-safety: plain values; an AdamWState is used by the one thread that
// drives the optimizers.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace pw {

// AdamW state that outlives the AdamW objects using it, so that checkpoints
// can save and restore the moments of optimizers they do not own (the
// executor builds one AdamW per stage). An AdamW built with a state adopts
// the entry whose `param` is the same tensor as one of its parameters (the
// moment tensors are shared handles, updated in place), or appends a fresh
// zero entry; it starts counting steps at `initial_steps`.
// Thread-safety: used by the one thread that drives the optimizers.
struct AdamWState {
  struct Entry {
    at::Tensor param;
    at::Tensor exp_avg;
    at::Tensor exp_avg_sq;
  };
  std::vector<Entry> entries;
  int64_t initial_steps = 0;  // AdamW::Step calls already taken (resume)
};

struct OptimizerConfig {
  double lr = 3e-3;            // peak learning rate
  double min_lr = 3e-4;        // floor of the cosine decay
  int warmup_steps = 2;        // linear warm-up from lr / warmup_steps
  int total_steps = 0;         // cosine decay ends here; <= 0: the run's step count
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;   // decoupled (AdamW), on every parameter
  double grad_clip = 1.0;      // max global gradient norm; <= 0 disables
  // Optional shared moments (checkpoints); null: each AdamW keeps its own.
  std::shared_ptr<AdamWState> state;
};

}  // namespace pw
