// The fields that name a model's weights, shared by the jobs that load a
// whole model (InferJob, EvalJob): a checkpoint, or a random init of a
// config with overrides. `Job` has members checkpoint, config, seed, set.
#pragma once

#include "core/fields.h"

namespace pw {

template <class Job, class V>
void VisitModelSourceFields(Job& j, V& v) {
  v(j.checkpoint, {"checkpoint", "Checkpoint directory written by `pipewright train`", 0, 0, kFieldPath});
  v(j.model_dir, {"model", "Hugging Face model directory (config.json, *.safetensors; docs/models.md)", 0, 0,
                  kFieldPath});
  v(j.config, {"config", "Model TOML for a random init (default, without --checkpoint: the built-in tiny model)",
               0, 0, kFieldPath});
  v(j.seed, {"seed", "Seed of the random init"});
  v(j.set, {"set", "Model override model.key=value (repeatable; random init or --model)"});
}

}  // namespace pw
