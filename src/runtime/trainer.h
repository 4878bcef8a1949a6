// Training loops: one rank of a pp x dp pipeline job (RunPipelineRank), and
// the single-process reference that pipeline runs must match
// (RunReferenceTraining). Both draw the same batches from the same corpus
// (ByteCorpus::Sample keyed by seed, step and global microbatch) and start
// from the same parameters (the model's deterministic init), so with
// dropout 0 they compute the same losses and parameters up to float
// rounding.
//
// A step: replica d trains on global microbatches d*m .. d*m+m-1 (m =
// microbatches per replica), each of microbatch_size sequences; the loss is
// the mean over all m*dp microbatches; gradients are clipped by the global
// norm, then AdamW with the warm-up + cosine learning rate. Validation
// (after every eval_every steps and after the last) evaluates validation
// batches d*k .. d*k+k-1 on replica d (k = eval_batches).
//
// Thread-safety: each call runs on the caller's thread; no shared state.
// Failure: Status for bad configs, data, rendezvous, and (from the executor)
// anything that fails inside a step, naming rank, step and action.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "comm/world_info.h"
#include "core/status.h"
#include "model/model_config.h"
#include "runtime/optimizer.h"
#include "runtime/progress.h"
#include "schedule/schedule.h"

namespace pw {

struct TrainConfig {
  ModelConfig model;
  int pp = 2;                  // pipeline ranks
  int dp = 1;                  // data-parallel replicas
  int chunks = 0;              // stages per rank (0: the family's default)
  std::string schedule = "1f1b";
  int microbatches = 4;        // per replica and step
  int microbatch_size = 2;     // sequences per microbatch
  int steps = 10;
  uint64_t seed = 1234;        // model init and data order
  std::string data;            // text file or directory; empty: the default corpus
  double val_fraction = 0.1;
  std::string layers_per_stage;  // "" = balanced, or "2,3,3"
  OptimizerConfig optimizer;   // total_steps is set from steps when <= 0
  int eval_every = 0;          // validation every this many steps; 0: after the last only
  int eval_batches = 4;        // validation microbatches per replica; 0: no validation
  // Checkpoints (runtime/checkpoint.h), pipeline runs only. With
  // checkpoint_dir set, a checkpoint is written there after every
  // checkpoint_every steps (0: never in between) and after the last step.
  // With resume_dir set, training continues from that checkpoint's step up
  // to `steps`; the checkpoint must match this job (CheckResumable).
  std::string checkpoint_dir;
  int checkpoint_every = 0;
  std::string resume_dir;
  // Measured outputs (runtime/profile.h), pipeline runs only, written by world rank 0.
  std::string trace_out;       // --trace: per-rank timeline, Chrome/Perfetto JSON
  std::string profile_out;     // --profile-out: per-(stage, kind) costs, cost-model JSON
  // Progress (runtime/progress.h) instead of step lines on world rank 0:
  // kPlain (step lines), kInPlace (stdout is a terminal), kRelay (a launcher renders it).
  ProgressMode progress = ProgressMode::kPlain;
};

struct StepReport {
  int64_t step = 0;
  double loss = 0;
  double lr = 0;
  double grad_norm = 0;
  double seconds = 0;
  bool has_val_loss = false;   // validation ran after this step
  double val_loss = 0;         // mean over eval_batches * dp validation microbatches
  double tokens_per_s = 0;     // trained tokens of the step (all replicas) / step time
  double bubble_ratio_measured = 0;   // see StepOutcome::bubble_ratio
  double bubble_ratio_predicted = 0;  // the simulator's, with costs from the partitioner
};
using StepCallback = std::function<void(const StepReport&)>;
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// The compute-only schedule of config.schedule (a built-in family) for
// pp ranks, m microbatches and config.chunks. Errors come from the generator.
Result<Schedule> GenerateTrainingSchedule(const TrainConfig& config);

// Runs config.steps steps as rank world.rank of a pp x dp job: rendezvous
// (ProcessGroups), this rank's stages, lowering of `compute_schedule` (F, B,
// I, W only; its ranks must equal pp and its microbatches m), the executor.
// Calls `on_step` after every step on every rank (the loss is already
// global). `final_params`, when given, receives this rank's parameters with
// partition-independent names. Blocks for the whole training.
Status RunPipelineRank(const TrainConfig& config, const Schedule& compute_schedule,
                       const WorldInfo& world, const StepCallback& on_step,
                       NamedTensors* final_params = nullptr);

// The same training in this process on the whole model (m*dp microbatches
// per step, no schedule). Blocks.
Status RunReferenceTraining(const TrainConfig& config, const StepCallback& on_step,
                            NamedTensors* final_params = nullptr);

// "sum=... abs=... wsum=..." summary lines of parameters (one per name) that
// pipeline ranks print and tests compare: sum, sum of |x| and a
// position-weighted sum (catches permutations), each in float64.
struct ParamSummary {
  std::string name;
  double sum = 0, abs_sum = 0, weighted_sum = 0;
};
std::vector<ParamSummary> SummarizeParams(const NamedTensors& params);

}  // namespace pw

namespace pw {

// The body of one locally launched rank (`pipewright train --worker`, the
// tests' rank helper): reads the world from the environment
// (WorldFromEnvironment), runs RunPipelineRank, and prints on stdout
//   world rank 0:  "step <n>  loss <x>  lr <x>  grad_norm <x>  <t> ms"
//                  "val step <n> loss <x>" after a validation
//                  "summary: ..." at the end (without print_params)
//   every rank, with print_params: "param <name> <sum> <abs_sum> <weighted_sum>"
// (with print_params every number has 17 significant digits, for tests;
// stdout is flushed per line).
// With `metrics_out` non-empty, world rank 0 also writes one JSON object per
// step to that file: step, loss, lr, grad_norm, tokens_per_s,
// bubble_ratio_measured, bubble_ratio_predicted, and val_loss when measured.
Status RunWorker(const TrainConfig& config, const Schedule& compute_schedule, bool print_params,
                 const std::string& metrics_out = "");

}  // namespace pw
