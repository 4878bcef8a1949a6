// Training checkpoints: a directory with one safetensors file per pipeline
// stage ("stage_<s>.safetensors": "param/<name>", "adam_m/<name>" and
// "adam_v/<name>" for each of the stage's parameters, names
// partition-independent) and manifest.json, which says everything else that
// exact continuation needs: the model config (TOML text), the pipewright
// version, schedule, pp, dp, microbatches, seed, the completed step count
// (the data position too: batches are a pure function of seed and step, see
// runtime/data.h), the optimizer's step count and resolved hyperparameters,
// the next step's learning rate, the stage layout with its file names, and
// the settings of the job that wrote it.
//
// The manifest is the commit point: it is removed before stage files are
// rewritten and written (atomically) after all of them, so a directory with a
// manifest is always a complete checkpoint. Dropout generators are not saved,
// so checkpoints require model.dropout = 0 (the trainer checks).
//
// Thread-safety: free functions without shared state.
// Failure: Status naming the directory and file; IoError for the disk,
// InvalidArgument / FailedPrecondition for malformed or mismatched files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/optimizer_state.h"

namespace pw {

class StageModule;

inline constexpr const char* kPipewrightVersion = "0.1";
inline constexpr const char* kCheckpointManifest = "manifest.json";

struct CheckpointStage {
  int stage = 0;
  int first_block = 0;
  int num_blocks = 0;
  bool has_embedding = false;
  bool has_head = false;
  std::string file;  // relative to the checkpoint directory
};

struct CheckpointManifest {
  std::string version = kPipewrightVersion;
  std::string model_config;  // FormatModelConfig text
  std::string schedule;
  int pp = 0, dp = 0, microbatches = 0, microbatch_size = 0;
  uint64_t seed = 0;
  int64_t step = 0;             // completed steps: resume runs step, step+1, ...
  int64_t optimizer_steps = 0;  // AdamW::Step calls per stage so far
  OptimizerConfig optimizer;    // resolved hyperparameters (state unused)
  double next_lr = 0;           // LR schedule position: the LR of `step`
  std::vector<CheckpointStage> stages;
  // Every setting of the job that wrote it, as the JSON object of its job
  // file (job/train_job.h; "" when absent): what to rerun, and a record of
  // the flags that produced the weights. Not compared on resume.
  std::string job;
};

// "stage_<s>.safetensors".
std::string CheckpointStageFile(int stage);

// Writes `stage`'s parameters and its moments found in `state` (zeros for a
// parameter the optimizer has not seen) to dir/CheckpointStageFile(stage).
// Blocks on file I/O; IoError on failure.
Status WriteCheckpointStage(const std::string& dir, const StageModule& stage,
                            const AdamWState& state);

// Reads dir/CheckpointStageFile(stage.stage()), checks it holds exactly the
// stage's parameters with their shapes, copies the parameters into `stage`
// in place and appends their moments to `state`. Blocks on file I/O.
// NotFound / InvalidArgument (naming file and tensor) on failure; the stage
// may be partly loaded then.
Status LoadCheckpointStage(const std::string& dir, StageModule& stage, AdamWState& state);

// Atomic write / validated read of dir/manifest.json. Blocks on file I/O.
Status WriteCheckpointManifest(const std::string& dir, const CheckpointManifest& manifest);
Result<CheckpointManifest> ReadCheckpointManifest(const std::string& dir);

// FailedPrecondition naming each field where `found` (a checkpoint) differs
// from `expected` (this run) in what exact resumption needs: model config,
// schedule, pp, dp, microbatches, microbatch size, seed and stage layout.
// Optimizer hyperparameters may differ (this run's win). Pure.
Status CheckResumable(const std::string& dir, const CheckpointManifest& found,
                      const CheckpointManifest& expected);

}  // namespace pw
