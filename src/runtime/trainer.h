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
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/world_info.h"
#include "core/status.h"
#include "model/model_config.h"
#include "runtime/idle_listener.h"
#include "runtime/optimizer.h"
#include "runtime/progress.h"
#include "runtime/timeline.h"
#include "schedule/schedule.h"
#include "sim/cost_model.h"

namespace pw {

struct TrainConfig;

// --- Rank observers: the hook bubble harvesting (harvest/) plugs into. ---
// runtime/ does not depend on harvest/: the CLI fills TrainConfig::observer
// with harvest's manager. One observer per rank sees the executor's idle
// edges (IdleListener), the costs measured in the first steps, and the end
// of training, and returns a report that world rank 0 gathers and prints.

// What an observer may know about its rank. Pointers are valid only during
// the factory call (copy what you keep).
struct RankContext {
  int world_rank = 0, world_size = 1, local_rank = 0;
  int pp_rank = 0, dp_rank = 0;
  const TrainConfig* config = nullptr;
  const Schedule* compute = nullptr;  // the compute-only schedule (F, B, I, W)
  const Schedule* lowered = nullptr;  // what the executor runs (with RECV, SEND, OPT)
  // Estimates for placement before anything is measured, per stage: the
  // partitioner's forward FLOPs (relative cost), and bytes of activations
  // one microbatch holds from F to its backward. Per pipeline rank: bytes of
  // parameters, gradients and AdamW state (16 bytes per parameter).
  std::vector<double> stage_flops, stage_activation_bytes;
  std::vector<double> rank_static_bytes;
};

class RankObserver : public IdleListener {
 public:
  // After the first TrainObserverHooks::profile_steps steps, on every rank:
  // the measured mean per-(stage, kind) compute costs in milliseconds of the
  // whole pipeline (runtime/profile.h; the first step is left out), with
  // each stage's activation bytes filled from RankContext. On the executor's
  // thread, between steps.
  virtual void OnCostsMeasured(const CostModel& costs) = 0;
  // After the last step (or when training fails): stop whatever the
  // observer runs, and return this rank's report as one JSON object.
  virtual std::string Finish() = 0;
  // After Finish: intervals to draw in this rank's own lane of the trace
  // ("side tasks" under each rank), steady_clock times.
  struct LaneEvent {
    std::string name;
    Timeline::Clock::time_point start, end;
  };
  virtual std::vector<LaneEvent> LaneEvents() const { return {}; }
};

struct TrainObserverHooks {
  // Called once per rank after rendezvous; null: no observer. An error
  // fails the rank (bad --side-task settings).
  std::function<Result<std::unique_ptr<RankObserver>>(const RankContext&)> make;
  // World rank 0, after training: every world rank's Finish() report
  // (index = world rank) and the run's step times in seconds (index = step
  // - first step); returns text to print after the summary line.
  std::function<std::string(const std::vector<std::string>& reports,
                            const std::vector<double>& step_seconds)>
      summarize;
  int profile_steps = 3;  // steps timed before OnCostsMeasured (>= 2)
};

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
  // Bubble harvesting (see RankObserver above); empty: none.
  TrainObserverHooks observer;
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
// With config.observer.make: the rank's observer gets the executor's idle
// edges, the measured costs after profile_steps steps (timeline recording is
// on until then, and stays on only for --trace / --profile-out), and
// Finish() at the end; `observer_reports`, when given, receives every world
// rank's report on world rank 0 (a collective over the world).
Status RunPipelineRank(const TrainConfig& config, const Schedule& compute_schedule,
                       const WorldInfo& world, const StepCallback& on_step,
                       NamedTensors* final_params = nullptr,
                       std::vector<std::string>* observer_reports = nullptr);

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
// With config.observer: after the summary, world rank 0 prints
// observer.summarize(...) and appends one line {"observers": [reports]} to
// `metrics_out` (the reports of every world rank, in order).
Status RunWorker(const TrainConfig& config, const Schedule& compute_schedule, bool print_params,
                 const std::string& metrics_out = "");

}  // namespace pw
