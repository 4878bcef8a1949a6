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

// The manifest this job would write after `step` completed steps. Pure.
CheckpointManifest ManifestFor(const TrainJob& job, const ModelPartition& partition, int64_t step);

// Writes the checkpoint after `completed_steps` to job.checkpoint_dir.
// Collective over the world: world rank 0 removes the old manifest, the dp
// rank 0 of each pipeline writes its stages, world rank 0 writes the
// manifest after a barrier (so a manifest always names complete files).
// Blocks. IoError names the directory or file.
Status SaveTrainingCheckpoint(const TrainJob& job, const ModelPartition& partition, int64_t completed_steps,
                              const WorldInfo& world, ProcessGroups& groups,
                              const std::vector<std::unique_ptr<StageModule>>& stages, const AdamWState& state);

}  // namespace pw
