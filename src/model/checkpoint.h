// Training checkpoints: a directory with manifest.json and, per checkpoint,
// a subdirectory "step_<N>" (N = completed steps) with one safetensors file
// per pipeline stage ("stage_<s>.safetensors": "param/<name>",
// "adam_m/<name>" and "adam_v/<name>" for each of the stage's parameters,
// names partition-independent). The manifest says everything else that
// exact continuation needs: the model config (TOML text), the pipewright
// version, schedule, pp, dp, microbatches, seed, the completed step count
// (the data position too: batches are a pure function of seed and step, see
// runtime/data.h), the optimizer's step count and resolved hyperparameters,
// the next step's learning rate, the stage layout with its files and each
// file's size and SHA-256, and the settings of the job that wrote it.
//
// The manifest is the commit point. Stage files are written durably
// (model/durable_file.h: temporary file, fsync, rename) into the new step's
// subdirectory while the old manifest still names the previous checkpoint's
// files; the new manifest replaces it last, atomically, and only then are
// the previous checkpoint's files removed. A crash at any moment leaves the
// previous checkpoint or the new one loadable. Readers verify every stage
// file's size and SHA-256 against the manifest before parsing it; a
// checkpoint written before checksums (no "sha256" in its stages, stage
// files beside the manifest) loads with a warning. Dropout generators are
// not saved, so checkpoints require model.dropout = 0 (the trainer checks).
//
// Thread-safety: free functions without shared state.
// Failure: Status naming the directory and file; IoError for the disk and
// for a file whose bytes differ from its manifest entry (corrupt),
// InvalidArgument / FailedPrecondition for malformed or mismatched files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/checkpoint_manifest.h"
#include "model/durable_file.h"
#include "model/optimizer_state.h"
#include "model/safetensors.h"

namespace pw {

class StageModule;

// "stage_<s>.safetensors": the stage file's name (checkpoints written
// before checksums keep it beside the manifest).
std::string CheckpointStageFile(int stage);

// "step_<N>/stage_<s>.safetensors": where the checkpoint after `step`
// completed steps keeps `stage`'s file, relative to the directory.
std::string CheckpointStagePath(int64_t step, int stage);

// Writes `stage`'s parameters and its moments found in `state` (zeros for a
// parameter the optimizer has not seen) durably to dir/`file` (default:
// CheckpointStageFile), creating its subdirectory. Returns the file's size
// and SHA-256 for the manifest. Blocks on file I/O; IoError on failure.
Result<FileDigest> WriteCheckpointStage(const std::string& dir, const StageModule& stage,
                                        const AdamWState& state, const std::string& file = {});

// Reads the stage file `entry` names in `dir` and, when the manifest has its
// checksum, verifies size and SHA-256 before parsing: a mismatch is an
// IoError naming the file, both digests and how to recover. Without a
// checksum (an older checkpoint) prints a warning to stderr and reads it
// unverified. Blocks on file I/O. NotFound / IoError / InvalidArgument.
Result<SafetensorsContents> ReadCheckpointFile(const std::string& dir, const CheckpointStage& entry);

// Reads (verified, as ReadCheckpointFile) the file of `manifest`'s entry for
// stage.stage(), checks it holds exactly the stage's parameters with their
// shapes, copies the parameters into `stage` in place and appends their
// moments to `state`. Blocks on file I/O. NotFound / IoError /
// InvalidArgument (naming file and tensor) on failure; the stage may be
// partly loaded then.
Status LoadCheckpointStage(const std::string& dir, const CheckpointManifest& manifest, StageModule& stage,
                           AdamWState& state);

// Removes what no reader of `manifest` needs from `dir`: "step_*"
// subdirectories and top-level "stage_*.safetensors" files it does not name,
// and stray "*.tmp" files of interrupted writes. Call after `manifest` was
// written. Blocks on file I/O; best effort (what cannot be removed stays).
void RemoveUnreferencedCheckpointFiles(const std::string& dir, const CheckpointManifest& manifest);

// Durable, atomic write (temporary file, fsync, rename) / validated read of
// dir/manifest.json. Blocks on file I/O.
Status WriteCheckpointManifest(const std::string& dir, const CheckpointManifest& manifest);
Result<CheckpointManifest> ReadCheckpointManifest(const std::string& dir);

// FailedPrecondition naming each field where `found` (a checkpoint) differs
// from `expected` (this run) in what exact resumption needs: model config,
// schedule, pp, dp, microbatches, microbatch size, seed and stage layout.
// Optimizer hyperparameters may differ (this run's win). Pure.
Status CheckResumable(const std::string& dir, const CheckpointManifest& found,
                      const CheckpointManifest& expected);

}  // namespace pw
