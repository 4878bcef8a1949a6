// TrainSession: one rank of a pp x dp pipeline training job, in phases.
//   Create   checks the job, lowers the compute schedule (gradient sync,
//            communication), partitions the model, loads the corpus, joins
//            the process groups, builds this rank's stages and observer;
//   Resume   continues from the job's --resume checkpoint, then builds the
//            executor (whose optimizers adopt the restored state); call it
//            once, with or without --resume;
//   Step     runs one training step: the executor, the observer's profile
//            after its first steps, validation, and the checkpoint due;
//   Finish   ends the observer, writes the measured trace and profile, and
//            gathers the observers' reports on world rank 0.
// RunPipelineRank (runtime/trainer.h) is these phases in order.
//
// A step: replica d trains on global microbatches d*m .. d*m+m-1 (m =
// microbatches per replica); the loss is the mean over all m*dp
// microbatches; gradients are clipped by the global norm, then AdamW with
// the warm-up + cosine learning rate. A non-finite loss or gradient norm
// (the same on every rank: both are all-reduced) never reaches the weights
// (the executor skips the update); with --on-nonfinite stop (default) Step
// then fails naming the step and the stages whose gradients are not finite,
// with skip it reports the step (StepReport::update_skipped) and goes on.
//
// Thread-safety: one thread drives a session. Every phase but Parameters is
// collective over the job's ranks (all must call it, in the same order).
// Failure: Status naming the problem (the executor's errors name rank, step
// and action); after a failed phase the session must not be used again.
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/process_groups.h"
#include "comm/world_info.h"
#include "core/status.h"
#include "job/train_job.h"
#include "model/partitioner.h"
#include "model/stage_module.h"
#include "runtime/data.h"
#include "runtime/executor.h"
#include "runtime/optimizer.h"
#include "runtime/rank_observer.h"
#include "runtime/timeline.h"
#include "schedule/schedule.h"

namespace pw {

struct StepReport {
  int64_t step = 0;
  double loss = 0;
  double lr = 0;
  double grad_norm = 0;
  double seconds = 0;
  bool update_skipped = false;  // --on-nonfinite skip: the step's update was not applied
  bool recompute_held = false;  // --recompute-paired: the step skipped DROP and RECOMPUTE
  bool has_val_loss = false;   // validation ran after this step
  double val_loss = 0;         // mean over eval_batches * dp validation microbatches
  double tokens_per_s = 0;     // trained tokens of the step (all replicas) / step time
  double bubble_ratio_measured = 0;   // see StepOutcome::bubble_ratio
  // The simulator's (same definition), with the partitioner's estimated
  // costs until the first steps' timeline re-predicts it with measured ones.
  double bubble_ratio_predicted = 0;
  bool bubble_predicted_from_timeline = false;  // measured costs, not estimates
  // Per pipeline rank (of this replica): the step's measured peaks (see
  // StepOutcome) and the simulator's peak (static + activations, with the
  // boundary buffers the executor holds), in bytes.
  std::vector<double> peak_allocated_bytes;
  std::vector<double> peak_resident_bytes;
  std::vector<double> peak_bytes_predicted;
  // Per pipeline rank: bytes OFFLOAD moved to the host this step and the
  // seconds spent in OFFLOAD and RELOAD (StepOutcome; zero without offload).
  std::vector<double> offloaded_bytes;
  std::vector<double> offload_seconds;
};
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// The optimizer settings of a job: min_lr = lr / 10, cosine decay over
// decay_steps (or steps). Pure.
OptimizerConfig OptimizerFor(const TrainJob& job);

// --recompute-paired needs a schedule with DROP actions and excludes
// --harvest-paired: InvalidArgument saying which, Ok otherwise (also when
// it is off). Pure; the launcher calls it before starting ranks.
Status CheckRecomputePaired(const TrainJob& job, const Schedule& compute);

// Whether validation runs after `step` (0-based). Pure.
bool EvaluatesAfter(const TrainJob& job, int64_t step);

class TrainSession {
 public:
  // The setup phase (see the header comment). `compute_schedule` has only
  // F, B, I, W; its ranks must equal job.pp and its microbatches job's.
  // Blocks for the rendezvous. `observer` may be empty (no observer).
  static Result<std::unique_ptr<TrainSession>> Create(const TrainJob& job, const Schedule& compute_schedule,
                                                      const WorldInfo& world, const TrainObserverHooks& observer);
  ~TrainSession();

  // Loads job.resume's checkpoint into this rank's stages and optimizer
  // state (it must match this job: CheckResumable), then builds the
  // executor. Call once, before the first Step, also without --resume.
  // --resume auto: job.checkpoint_dir's checkpoint if it has one, else step
  // 0; collective over the world (the ranks must see the same checkpoint).
  Status Resume();

  bool done() const { return step_ >= job_.steps; }
  int64_t step() const { return step_; }  // the next step to run

  // Runs step(), then the observer's profile (once), validation and the
  // checkpoint when due. Preconditions: Resume was called, !done().
  Result<StepReport> Step();

  // The end: the observer's Finish, the measured trace (with the
  // observers' lanes) and profile, and every world rank's observer report
  // in `observer_reports` on world rank 0 (may be null).
  Status Finish(std::vector<std::string>* observer_reports);

  // This rank's parameters with partition-independent names (copies; a
  // tied head's copy of the embedding, head.tied_weight, left out).
  NamedTensors Parameters() const;

 private:
  TrainSession(const TrainJob& job, const Schedule& compute_schedule, const TrainObserverHooks& hooks);
  Status Setup(const WorldInfo& world);
  Status CreateObserver(const WorldInfo& world);
  Status CreateExecutor();
  Result<std::string> ResolveAutoResume();  // --resume auto: the directory, or "" for step 0
  Status ProfileForObserver();
  Status PredictFromTimeline();
  void StopRecordingWhenDone();
  double BoundaryBytes() const;  // one boundary tensor: microbatch x seq_len x d_model floats
  Status SaveCheckpointIfDue();
  // The activation bytes a profile reports per stage (see the definition).
  std::vector<double> CalibratedActivationBytes() const;
  Result<bool> CheckFinite(int64_t step, const StepOutcome& outcome);
  Status WriteTraceWithObserverLanes(const std::vector<RankObserver::LaneEvent>& events,
                                     const MeasuredTraceOptions& trace_options);

  const TrainJob job_;
  const Schedule compute_;
  const TrainObserverHooks hooks_;
  WorldInfo world_;
  Schedule lowered_;  // what the executor will run; moved into it by CreateExecutor
  ModelPartition partition_;
  std::unique_ptr<TrainCorpus> corpus_;
  std::unique_ptr<ProcessGroups> groups_;
  std::vector<std::unique_ptr<StageModule>> stages_;
  std::shared_ptr<AdamWState> optimizer_state_;
  RankContext context_;  // the estimates handed to the observer
  std::unique_ptr<RankObserver> observer_;
  std::unique_ptr<Executor> executor_;
  double predicted_bubbles_ = 0;
  std::vector<double> predicted_peak_bytes_;  // per pipeline rank
  std::vector<double> predicted_activation_peak_bytes_;  // per pipeline rank: the activations in it
  std::vector<double> measured_peak_bytes_;   // per pipeline rank: the largest step peak so far
  bool keep_timeline_ = false;  // --trace or --profile-out
  bool profiled_ = false;
  // Steps recorded before the bubbles are re-predicted from measured costs
  // (the first is warm-up and left out).
  static constexpr int64_t kPredictionSteps = 3;
  bool predicts_from_timeline_ = false;  // enough steps to re-predict and compare
  bool predicted_from_timeline_ = false;
  int64_t first_step_ = 0;
  int64_t step_ = 0;
  int64_t optimizer_steps_ = 0;  // steps whose update was applied (all but skipped ones)
  std::map<int64_t, std::chrono::steady_clock::time_point> step_origins_;  // for the observer lanes
};

}  // namespace pw
