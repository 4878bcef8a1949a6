// The optimizer's plain data: AdamW hyperparameters (OptimizerConfig, in
// model/optimizer_config.h) and the moments that outlive the optimizer
// objects (AdamWState). They live below runtime/ because checkpoints
// (model/checkpoint.h) save and restore them and inference reads
// checkpoints without the training runtime; the optimizer itself
// (runtime/optimizer.h) uses them.
//
// Thread-safety: plain values; an AdamWState is used by the one thread that
// drives the optimizers.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "model/optimizer_config.h"

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

}  // namespace pw
