// The checkpoint manifest (manifest.json, model/checkpoint.h) as data, and
// its JSON text both ways. No LibTorch and no file I/O, so that the fuzz
// target (fuzz/checkpoint_manifest_fuzz.cc) builds it with clang and the
// sanitizers; checkpoint.cc reads and writes the file durably around these.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/optimizer_config.h"

namespace pw {

inline constexpr const char* kPipewrightVersion = "0.1";
inline constexpr const char* kCheckpointManifest = "manifest.json";
// A checkpoint trained from a Hugging Face directory (`train --model`)
// carries that directory's tokenizer and config files here
// (config.json, generation_config.json, tokenizer*.json, ...): serving and
// scoring it need no --tokenizer, and `export` keeps the model's facts
// (its context, BOS/EOS) rather than the training run's.
inline constexpr const char* kCheckpointSourceDir = "source";

struct CheckpointStage {
  int stage = 0;
  int first_block = 0;
  int num_blocks = 0;
  bool has_embedding = false;
  bool has_head = false;
  std::string file;  // relative to the checkpoint directory
  // The file's size and SHA-256 (64 hex digits) as written; sha256 empty in
  // checkpoints written before checksums (then unverified).
  uint64_t bytes = 0;
  std::string sha256;
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
  // The same job as the user asked for it, before planning (`auto`
  // schedules and splits, a schedule file's shape), and the plan that ran:
  // schedule, pp, microbatches, chunks, layers_per_stage, schedule_costs and
  // why (job/train_plan.h). JSON object text; "" when absent.
  std::string request;
  std::string plan;
};

// Whether `text` is 64 lowercase hex digits (a SHA-256 as the manifest
// records it).
bool IsSha256Hex(std::string_view text);

// The manifest's JSON text (2-space indented, newline-terminated).
// ParseCheckpointManifest reads back the same manifest.
std::string FormatCheckpointManifest(const CheckpointManifest& manifest);

// Parses and validates manifest JSON; `path` names the file in messages.
// InvalidArgument "<path>: ..." for text that is not a JSON object (a
// number beyond a double's range is not JSON here), a missing key or a
// value of the wrong type, a negative step count, a sha256 that is not
// 64 hex digits, or a stage file that is not a relative path inside the
// checkpoint directory.
Result<CheckpointManifest> ParseCheckpointManifest(std::string_view text, const std::string& path);

}  // namespace pw
