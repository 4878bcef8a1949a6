// Training loops: one rank of a pp x dp pipeline job (RunPipelineRank, the
// phases of a TrainSession in order), and the single-process reference
// that pipeline runs must match (RunReferenceTraining). Both draw the same
// batches from the same corpus (TrainCorpus::Sample keyed by seed, step and
// global microbatch) and start from the same parameters (the model's
// deterministic init), so with dropout 0 they compute the same losses and
// parameters up to float rounding.
//
// Validation (after every eval_every steps and after the last) evaluates
// validation batches d*k .. d*k+k-1 on replica d (k = eval_batches).
//
// Thread-safety: each call runs on the caller's thread; no shared state.
// Failure: Status for bad jobs, data, rendezvous, and (from the executor)
// anything that fails inside a step, naming rank, step and action.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "comm/world_info.h"
#include "core/status.h"
#include "job/train_job.h"
#include "job/train_plan.h"
#include "runtime/rank_observer.h"
#include "runtime/train_session.h"
#include "schedule/schedule.h"

namespace pw {

using StepCallback = std::function<void(const StepReport&)>;

// The compute-only schedule of job.schedule (a built-in family) for pp
// ranks, m microbatches and job.chunks. Errors come from the generator.
Result<Schedule> GenerateTrainingSchedule(const TrainJob& job);

// A job's plan and its compute-only schedule.
struct TrainPlan {
  ResolvedTrainPlan resolved;  // what runs, and why
  Schedule schedule;           // compute actions only (TrainSession lowers it)
};

// Plans the compute-only schedule a request names (dsl/schedule_source.h):
// a built-in family, a .pipe, CSV or text file, or `auto` — the family with
// the shortest simulated step for this model and shape under unit costs
// measured here first (runtime/calibrate.h, search/auto_schedule.h
// ChooseScheduleByMeasurement; about a second), with the reason in the
// plan's `why`. With `auto` and no layers_per_stage, or with
// layers_per_stage `auto` (any schedule), the stage split with the shortest
// simulated step under those costs is the plan's layers_per_stage. When
// `may_measure` is false (a rank started by torchrun etc., whose peers would
// measure differently) or calibration fails, the FLOP estimates decide
// instead and `why` says so. The schedule's shape is the plan's pp and
// microbatches (a file sets it); `pp_given` / `microbatches_given` say
// whether the user set them, and a file must agree with what was given. A
// .pipe file's `layers` directive (written by `plan -o`) is the plan's
// split; it must sum to model.n_layers and agree with a layers_per_stage the
// request has (InvalidArgument naming the file, line and directive).
// `request` is not changed: ApplyPlan(request, plan.resolved)
// (job/train_plan.h) is what the ranks run. A request that is already a
// plan applied (a worker's job file) plans to the same plan, without
// measuring. Reads the schedule file.
Result<TrainPlan> PlanTraining(const TrainJob& request, bool pp_given, bool microbatches_given,
                               bool may_measure = true);

// Runs job.steps steps as rank world.rank (TrainSession: setup, resume,
// steps, finish). Calls `on_step` after every step on every rank (the loss
// is already global). `final_params`, when given, receives this rank's
// parameters with partition-independent names; `observer_reports`, when
// given, every world rank's observer report on world rank 0. Blocks for
// the whole training.
Status RunPipelineRank(const TrainJob& job, const Schedule& compute_schedule, const WorldInfo& world,
                       const StepCallback& on_step, NamedTensors* final_params = nullptr,
                       std::vector<std::string>* observer_reports = nullptr,
                       const TrainObserverHooks& observer = {});

// The same training in this process on the whole model (m*dp microbatches
// per step, no schedule). Blocks.
Status RunReferenceTraining(const TrainJob& job, const StepCallback& on_step, NamedTensors* final_params = nullptr);

// "sum=... abs=... wsum=..." summary lines of parameters (one per name) that
// pipeline ranks print and tests compare: sum, sum of |x| and a
// position-weighted sum (catches permutations), each in float64.
struct ParamSummary {
  std::string name;
  double sum = 0, abs_sum = 0, weighted_sum = 0;
};
std::vector<ParamSummary> SummarizeParams(const NamedTensors& params);

}  // namespace pw
