// AdamW's hyperparameters as plain data, without LibTorch, so that the
// checkpoint manifest (model/checkpoint_manifest.h), which records them,
// parses in torch-free code (the fuzz targets). The moments live in
// AdamWState (model/optimizer_state.h).
#pragma once

#include <memory>

namespace pw {

struct AdamWState;

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
