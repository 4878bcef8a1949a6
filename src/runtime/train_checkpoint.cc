#include "runtime/train_checkpoint.h"

#include <filesystem>
#include <sstream>
#include <string>

#include "comm/gather.h"
#include "job/fields_json.h"
#include "job/train_plan.h"
#include "runtime/fault_injection.h"
#include "runtime/train_session.h"
#include "core/file_io.h"
#include "model/durable_file.h"
#include "text/tokenizer_loader.h"

namespace pw {

CheckpointManifest ManifestFor(const TrainJob& job, const ModelPartition& partition, int64_t step,
                               int64_t optimizer_steps) {
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
  m.optimizer_steps = optimizer_steps < 0 ? step : optimizer_steps;  // AdamW::Step calls per stage
  m.optimizer = optimizer;
  m.optimizer.state = nullptr;
  m.next_lr = LearningRate(optimizer, step);
  for (const StageSpan& span : partition.stages) {
    m.stages.push_back({span.stage, span.first_block, span.num_blocks, span.has_embedding, span.has_head,
                        CheckpointStagePath(step, span.stage)});
  }
  nlohmann::json settings = FieldsToJson(job);
  settings.erase("request_json");  // recorded on its own, as an object
  m.job = settings.dump();
  if (!job.request_json.empty()) m.request = job.request_json;
  m.plan = FieldsToJson(PlanOf(job)).dump();
  return m;
}

namespace {

// Copies the tokenizer and config files of the Hugging Face directory the
// job started from into the checkpoint (kCheckpointSourceDir), each
// durably, once.
Status CarrySourceFiles(const std::string& model_dir, const std::string& checkpoint_dir) {
  if (model_dir.empty()) return Status::Ok();
  const std::filesystem::path to = std::filesystem::path(checkpoint_dir) / kCheckpointSourceDir;
  std::error_code ec;
  std::filesystem::create_directories(to, ec);
  if (ec) return Status::IoError("cannot create " + to.string() + ": " + ec.message());
  for (const std::string& name : TokenizerFilesIn(model_dir)) {
    if (std::filesystem::is_regular_file(to / name, ec)) continue;
    PW_ASSIGN_OR_RETURN(std::string bytes, ReadTextFile((std::filesystem::path(model_dir) / name).string()));
    PW_RETURN_IF_ERROR(WriteFileDurably((to / name).string(), bytes).status());
  }
  return Status::Ok();
}

}  // namespace

Status SaveTrainingCheckpoint(const TrainJob& job, const ModelPartition& partition, int64_t completed_steps,
                              int64_t optimizer_steps, const WorldInfo& world, ProcessGroups& groups,
                              const std::vector<std::unique_ptr<StageModule>>& stages, const AdamWState& state) {
  const std::string& dir = job.checkpoint_dir;
  CheckpointManifest manifest = ManifestFor(job, partition, completed_steps, optimizer_steps);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create --checkpoint-dir " + dir + ": " + ec.message());
  if (world.rank == 0) {
    // Files of the step about to be written are rewritten in place: a
    // manifest naming them must not outlive that.
    Result<CheckpointManifest> current = ReadCheckpointManifest(dir);
    if (current.ok() && !current->stages.empty() && !manifest.stages.empty() &&
        std::filesystem::path(current->stages[0].file).parent_path() ==
            std::filesystem::path(manifest.stages[0].file).parent_path()) {
      std::filesystem::remove(std::filesystem::path(dir) / kCheckpointManifest, ec);
    }
  }
  PW_RETURN_IF_ERROR(groups.world().Barrier());
  // One line per stage written: "<stage> <bytes> <sha256>".
  std::string digests;
  if (groups.dp_rank() == 0) {
    for (const auto& s : stages) {
      PW_ASSIGN_OR_RETURN(FileDigest digest,
                          WriteCheckpointStage(dir, *s, state, CheckpointStagePath(completed_steps, s->stage())));
      digests += std::to_string(s->stage()) + " " + std::to_string(digest.bytes) + " " + digest.sha256 + "\n";
    }
  }
  PW_RETURN_IF_ERROR(MaybeInjectFault(ProcessEnvironment(), "checkpoint", world.rank, completed_steps));
  // Also the barrier after which every stage file is complete.
  PW_ASSIGN_OR_RETURN(std::vector<std::string> all, GatherStrings(groups.world(), digests));
  if (world.rank != 0) return Status::Ok();
  for (const std::string& text : all) {
    std::istringstream lines(text);
    int stage = 0;
    uint64_t bytes = 0;
    std::string sha256;
    while (lines >> stage >> bytes >> sha256) {
      for (CheckpointStage& entry : manifest.stages) {
        if (entry.stage == stage) entry.bytes = bytes, entry.sha256 = sha256;
      }
    }
  }
  for (const CheckpointStage& entry : manifest.stages) {
    PW_CHECK(!entry.sha256.empty(), "no rank wrote stage " + std::to_string(entry.stage));
  }
  PW_RETURN_IF_ERROR(CarrySourceFiles(job.model_dir, dir));
  PW_RETURN_IF_ERROR(MaybeInjectFault(ProcessEnvironment(), "manifest", world.rank, completed_steps));
  PW_RETURN_IF_ERROR(WriteCheckpointManifest(dir, manifest));
  RemoveUnreferencedCheckpointFiles(dir, manifest);
  return Status::Ok();
}

}  // namespace pw
