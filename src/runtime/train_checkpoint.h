// Checkpoints of a training job (the files: model/checkpoint.h): what the
// manifest of this job says after a given step, and the collective that
// writes one.
//
// Thread-safety: pure, except SaveTrainingCheckpoint (see there).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/process_groups.h"
#include "comm/world_info.h"
#include "core/status.h"
#include "job/train_job.h"
#include "model/partitioner.h"
#include "model/stage_module.h"
#include "model/checkpoint.h"
#include "runtime/optimizer.h"

namespace pw {

// The manifest this job would write after `step` completed steps, of which
// `optimizer_steps` updated the weights (-1: all of them; fewer when
// --on-nonfinite skip skipped some), without file checksums. Pure.
CheckpointManifest ManifestFor(const TrainJob& job, const ModelPartition& partition, int64_t step,
                               int64_t optimizer_steps = -1);

// Writes the checkpoint after `completed_steps` to job.checkpoint_dir.
// Collective over the world: the dp rank 0 of each pipeline writes its
// stages into step_<completed_steps>/ (model/checkpoint.h), every rank
// hands the digests of what it wrote to world rank 0, which writes the
// manifest with them and then removes the previous checkpoint's files. The
// previous checkpoint stays loadable until the new manifest replaces it,
// except when it is of the same step (a rerun into the same directory):
// world rank 0 removes that manifest first. Blocks. IoError names the
// directory or file.
Status SaveTrainingCheckpoint(const TrainJob& job, const ModelPartition& partition, int64_t completed_steps,
                              int64_t optimizer_steps, const WorldInfo& world, ProcessGroups& groups,
                              const std::vector<std::unique_ptr<StageModule>>& stages, const AdamWState& state);

}  // namespace pw
