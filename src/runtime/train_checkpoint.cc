#include "runtime/train_checkpoint.h"

#include <filesystem>

#include "job/fields_json.h"
#include "runtime/train_session.h"

namespace pw {

CheckpointManifest ManifestFor(const TrainJob& job, const ModelPartition& partition, int64_t step) {
  const OptimizerConfig optimizer = OptimizerFor(job);
  CheckpointManifest m;
  m.model_config = FormatModelConfig(job.model);
  m.schedule = job.schedule;
  m.pp = job.pp;
  m.dp = job.dp;
  m.microbatches = job.microbatches;
  m.microbatch_size = job.microbatch_size;
  m.seed = job.seed;
  m.step = step;
  m.optimizer_steps = step;  // every stage's AdamW steps once per training step
  m.optimizer = optimizer;
  m.optimizer.state = nullptr;
  m.next_lr = LearningRate(optimizer, step);
  for (const StageSpan& span : partition.stages) {
    m.stages.push_back({span.stage, span.first_block, span.num_blocks, span.has_embedding, span.has_head,
                        CheckpointStageFile(span.stage)});
  }
  m.job = FieldsToJson(job).dump();
  return m;
}

Status SaveTrainingCheckpoint(const TrainJob& job, const ModelPartition& partition, int64_t completed_steps,
                              const WorldInfo& world, ProcessGroups& groups,
                              const std::vector<std::unique_ptr<StageModule>>& stages, const AdamWState& state) {
  const std::string& dir = job.checkpoint_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create --checkpoint-dir " + dir + ": " + ec.message());
  if (world.rank == 0) {
    std::filesystem::remove(std::filesystem::path(dir) / kCheckpointManifest, ec);
  }
  PW_RETURN_IF_ERROR(groups.world().Barrier());
  if (groups.dp_rank() == 0) {
    for (const auto& s : stages) PW_RETURN_IF_ERROR(WriteCheckpointStage(dir, *s, state));
  }
  PW_RETURN_IF_ERROR(groups.world().Barrier());
  if (world.rank == 0) {
    PW_RETURN_IF_ERROR(WriteCheckpointManifest(dir, ManifestFor(job, partition, completed_steps)));
  }
  return Status::Ok();
}

}  // namespace pw
