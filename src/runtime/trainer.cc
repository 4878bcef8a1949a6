#include "runtime/trainer.h"

#include <ATen/ATen.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "model/gpt.h"
#include "model/hf_checkpoint.h"
#include "model/partitioner.h"
#include "model/stage_module.h"
#include "runtime/data.h"
#include "runtime/fault_injection.h"
#include "runtime/optimizer.h"
#include "dsl/parser.h"
#include "dsl/schedule_source.h"
#include "sim/cost_model_json.h"
#include "schedule/generators.h"
#include "core/text.h"
#include "runtime/calibrate.h"
#include "search/auto_schedule.h"
#include "search/measured_split.h"

namespace pw {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// A schedule file's `layers` directive is the split it was planned for
// (`plan -o`): the job trains with it unless layers_per_stage says
// otherwise, which is an error rather than a silent choice of one.
Status AdoptScheduleLayers(const TrainJob& job, ResolvedTrainPlan& plan, const dsl::LoadedSchedule& loaded) {
  if (loaded.layers_per_stage.empty()) return Status::Ok();
  std::string list;
  int blocks = 0;
  for (int n : loaded.layers_per_stage) {
    list += (list.empty() ? "" : ",") + std::to_string(n);
    blocks += n;
  }
  if (blocks != job.model.n_layers) {
    return Status::InvalidArgument(loaded.layers_where + " splits " + std::to_string(blocks) +
                                   " blocks, but model.n_layers = " + std::to_string(job.model.n_layers) +
                                   "; plan with a profile of this model (train --profile-out) or delete the line");
  }
  if (!plan.layers_per_stage.empty() && TrimSpaces(plan.layers_per_stage) != "auto") {  // the file's split is the plan
    Result<std::vector<int>> given = ParseLayersPerStage(plan.layers_per_stage);
    if (!given.ok() || *given != loaded.layers_per_stage) {
      return Status::InvalidArgument("--layers-per-stage " + plan.layers_per_stage + " contradicts " +
                                     loaded.layers_where + "; drop --layers-per-stage or the line");
    }
  }
  Result<ModelPartition> partition = PartitionModel(job.model, loaded.schedule.num_stages(), list);
  if (!partition.ok()) return partition.status().WithContext(loaded.layers_where);
  plan.layers_per_stage = list;
  return Status::Ok();
}

}  // namespace

Result<Schedule> GenerateTrainingSchedule(const TrainJob& config) {
  GeneratorOptions options;
  options.num_ranks = config.pp;
  options.num_microbatches = config.microbatches;
  options.chunks = config.chunks;
  return GenerateSchedule(config.schedule, options);
}

namespace {

// The model's units as calibration measured them, or why not (the
// estimate then decides). `basis` says which for the note.
struct MeasuredUnits {
  std::optional<search::ModelProfile> profile;
  CostModel base;  // the measured link between local ranks; free when unmeasured
  std::string basis;
};

MeasuredUnits MeasureUnits(const TrainJob& job, bool may_measure) {
  MeasuredUnits out;
  if (!may_measure) {
    out.basis = "estimated costs (ranks started by another launcher would each measure differently)";
    return out;
  }
  Result<search::UnitTimings> timings = CalibrateUnitTimings(job.model, job.microbatch_size, job.seed);
  Result<search::ModelProfile> profile =
      timings.ok() ? search::MeasuredUnitProfile(job.model, *timings, job.microbatch_size)
                   : Result<search::ModelProfile>(timings.status());
  if (!profile.ok()) {
    out.basis = "estimated costs (calibration failed: " + profile.status().message() + ")";
    return out;
  }
  out.profile = std::move(*profile);
  out.basis = "measured costs (" + search::DescribeUnitTimings(*timings);
  // A boundary's message: the hidden state of one microbatch.
  const double message_bytes = 4.0 * job.model.seq_len * job.microbatch_size * job.model.d_model;
  if (Result<LinkTimings> link = CalibrateLoopbackLink(message_bytes); link.ok()) {
    out.base.comm_latency = link->latency_ms;
    out.base.comm_bandwidth = link->bytes_per_ms;
    char buf[96];
    std::snprintf(buf, sizeof buf, "; link %.3g ms + %.3g ms per MiB", link->latency_ms,
                  1048576.0 / link->bytes_per_ms);
    out.basis += buf;
  } else {
    out.basis += "; link not measured, counted free: " + link.status().message();
  }
  out.basis += ")";
  return out;
}

// Schedule `auto`: the family (and, for a free split, the layers) that
// measurement or simulation picks, written to the plan.
Status ChooseAutoSchedule(const TrainJob& job, ResolvedTrainPlan& plan, const MeasuredUnits& units,
                          bool auto_layers) {
  ScheduleChoice choice;
  if (units.profile) {
    const std::string split = auto_layers ? "auto" : plan.layers_per_stage;
    PW_ASSIGN_OR_RETURN(choice, ChooseScheduleByMeasurement(job.model, plan.pp, plan.microbatches, split,
                                                            *units.profile, units.base));
    // A free split (none given, or auto) is the winner's measured one.
    if (plan.layers_per_stage.empty() || auto_layers) plan.layers_per_stage = choice.layers_per_stage;
  } else {
    if (auto_layers) plan.layers_per_stage.clear();  // the estimate's balanced split
    PW_ASSIGN_OR_RETURN(choice,
                        ChooseScheduleBySimulation(job.model, plan.pp, plan.microbatches, plan.layers_per_stage));
  }
  plan.schedule = choice.family;
  plan.why = "schedule auto: " + units.basis + "; " + choice.Describe();
  if (units.profile) plan.why += choice.SplitBackwardNote(*units.profile);
  plan.chunks = 0;
  return Status::Ok();
}

// What the schedule loader is asked for: the job's schedule and shape, and
// the --schedule-costs file (only a .pipe program is compiled with costs).
Result<dsl::ScheduleSource> ScheduleSourceOf(const ResolvedTrainPlan& job, bool pp_given,
                                             bool microbatches_given, bool pipe_file) {
  dsl::ScheduleSource source;
  source.schedule = job.schedule;
  source.ranks = job.pp;
  source.microbatches = job.microbatches;
  source.chunks = job.chunks;
  source.ranks_given = pp_given;
  source.microbatches_given = microbatches_given;
  if (job.schedule_costs.empty()) return source;
  if (!pipe_file) {
    return Status::InvalidArgument("--schedule-costs " + job.schedule_costs + ": only a .pipe schedule is "
                                   "compiled with costs; '" + job.schedule + "' is not a .pipe file");
  }
  Result<CostModel> costs = LoadCostModelFile(job.schedule_costs);
  if (!costs.ok()) return costs.status().WithContext("--schedule-costs");
  source.pipe_costs = std::move(*costs);
  source.pipe_costs_given = true;
  return source;
}

// A .pipe program's load failure with the hint its likely cause needs.
Status WithPipeLoadHint(const ResolvedTrainPlan& job, const Status& error) {
  // A plan's program is list-scheduled under the plan's costs; under the
  // default ones it may order differently or not finish.
  const bool cannot_finish = error.code() == StatusCode::kDeadlock || error.code() == StatusCode::kFailedPrecondition;
  Result<dsl::PipeProgram> program = dsl::LoadPipeFile(job.schedule);
  const bool named_costs = program.ok() && !program->costs_file.empty();
  if (job.schedule_costs.empty() && !named_costs && cannot_finish) {
    return Status(error.code(), error.message() +
                                    "\nhint: a .pipe written by `plan` compiles into the order it was planned in "
                                    "under the costs it was planned with: `plan -o` writes them beside it and "
                                    "names them in a `costs` line; add that line, or pass the file with "
                                    "--schedule-costs FILE")
        .WithReason(error.reason());
  }
  // (A costs line's mismatch carries the loader's own hint.)
  if (!job.schedule_costs.empty() && error.reason() == StatusReason::kCostsDoNotFit) {
    return Status(error.code(), error.message() + "\nhint: --schedule-costs " + job.schedule_costs +
                                    " must give the costs per stage of the plan's split: the costs file plan "
                                    "wrote with the program, not the profile it planned from")
        .WithReason(error.reason());
  }
  return error;
}

// `layers per stage auto` with a named schedule (or a file without a
// `layers` line): the split that simulates fastest on measured units, or
// the balanced estimate.
Status ChooseAutoLayers(const TrainJob& job, ResolvedTrainPlan& plan, const MeasuredUnits& units,
                        const Schedule& schedule) {
  if (!units.profile) {
    plan.layers_per_stage.clear();
    plan.why = "layers per stage auto: " + units.basis + "; balanced by estimated cost";
    return Status::Ok();
  }
  Result<ModelPartition> estimate = PartitionModel(job.model, schedule.num_stages(), "balanced");
  std::vector<search::StageBounds> starts;
  if (estimate.ok()) starts.push_back(search::UnitBoundsOf(*estimate));
  PW_ASSIGN_OR_RETURN(search::SplitOutcome split, search::BestSplitBySimulation(*units.profile, job.model.n_layers,
                                                                                schedule, starts, units.base));
  plan.layers_per_stage = split.blocks_per_stage;
  char buf[96];
  std::snprintf(buf, sizeof buf, "; %s simulates to %.3g s/step", split.blocks_per_stage.c_str(),
                split.makespan / 1000);
  plan.why = "layers per stage auto: " + units.basis + buf;
  return Status::Ok();
}

}  // namespace

Result<TrainPlan> PlanTraining(const TrainJob& request, bool pp_given, bool microbatches_given, bool may_measure) {
  // A worker's job is a plan applied by its launcher: PlanOf keeps its `why`.
  ResolvedTrainPlan plan = PlanOf(request);
  const bool auto_layers = TrimSpaces(plan.layers_per_stage) == "auto";
  MeasuredUnits units;
  if (plan.schedule == "auto" || auto_layers) units = MeasureUnits(request, may_measure);
  if (plan.schedule == "auto") PW_RETURN_IF_ERROR(ChooseAutoSchedule(request, plan, units, auto_layers));
  const bool pipe_file = std::filesystem::path(plan.schedule).extension() == ".pipe";
  PW_ASSIGN_OR_RETURN(dsl::ScheduleSource source, ScheduleSourceOf(plan, pp_given, microbatches_given, pipe_file));
  Result<dsl::LoadedSchedule> loaded_or = dsl::LoadScheduleWithLayers(source);
  if (!loaded_or.ok() && pipe_file) return WithPipeLoadHint(plan, loaded_or.status());
  PW_ASSIGN_OR_RETURN(dsl::LoadedSchedule loaded, std::move(loaded_or));
  // The program's `costs` line chose the order: the plan records the file, so
  // every rank compiles the same order and the checkpoint manifest names it.
  if (plan.schedule_costs.empty()) plan.schedule_costs = loaded.costs_path;
  PW_RETURN_IF_ERROR(AdoptScheduleLayers(request, plan, loaded));
  if (TrimSpaces(plan.layers_per_stage) == "auto") {
    PW_RETURN_IF_ERROR(ChooseAutoLayers(request, plan, units, loaded.schedule));
  }
  plan.pp = loaded.schedule.num_ranks();
  plan.microbatches = loaded.schedule.num_microbatches;
  PW_RETURN_IF_ERROR(CheckRecomputePaired(ApplyPlan(request, plan), loaded.schedule));
  return TrainPlan{std::move(plan), std::move(loaded.schedule)};
}

Status RunPipelineRank(const TrainJob& job, const Schedule& compute_schedule, const WorldInfo& world,
                       const StepCallback& on_step, NamedTensors* final_params,
                       std::vector<std::string>* observer_reports, const TrainObserverHooks& observer) {
  PW_ASSIGN_OR_RETURN(std::unique_ptr<TrainSession> session,
                      TrainSession::Create(job, compute_schedule, world, observer));
  PW_RETURN_IF_ERROR(session->Resume());
  while (!session->done()) {
    PW_ASSIGN_OR_RETURN(StepReport report, session->Step());
    if (on_step) on_step(report);
    PW_RETURN_IF_ERROR(MaybeInjectFault(ProcessEnvironment(), "step", world.rank, session->step()));
  }
  PW_RETURN_IF_ERROR(session->Finish(observer_reports));
  if (final_params != nullptr) *final_params = session->Parameters();
  return Status::Ok();
}

Status RunReferenceTraining(const TrainJob& config, const StepCallback& on_step,
                            NamedTensors* final_params) {
  PW_RETURN_IF_ERROR(ValidateModelConfig(config.model));
  PW_RETURN_IF_ERROR(CheckFieldRanges(config));
  PW_ASSIGN_OR_RETURN(TrainCorpus corpus,
                      TrainCorpus::Load(config.data, config.model.seq_len, kDefaultValidationFraction));
  StageModule model(config.model, WholeModelSpan(config.model), config.seed);
  if (!config.model_dir.empty()) {
    PW_RETURN_IF_ERROR(InitFromHfModel(config.model_dir, config.model, model.NamedParameters()));
  }
  const OptimizerConfig optimizer_config = OptimizerFor(config);
  AdamW optimizer(model.Parameters(), optimizer_config);
  const int total = config.microbatches * config.dp;
  const at::Tensor scale = at::full({1}, 1.0 / total, at::kFloat);
  for (int64_t step = 0; step < config.steps; ++step) {
    auto start = std::chrono::steady_clock::now();
    model.ZeroGrad();
    double loss_sum = 0;
    for (int g = 0; g < total; ++g) {
      TokenBatch batch = corpus.Sample(config.seed, step, g, config.microbatch_size);
      PW_ASSIGN_OR_RETURN(at::Tensor loss, model.Forward(g, batch.tokens, batch.targets));
      loss_sum += loss.item<double>();
      PW_ASSIGN_OR_RETURN(at::Tensor unused, model.BackwardFull(g, scale));
      (void)unused;
    }
    const double norm = std::sqrt(SquaredGradNorm(model.Parameters()));
    ScaleGrads(model.Parameters(), ClipCoefficient(norm, optimizer_config.grad_clip));
    const double lr = LearningRate(optimizer_config, step);
    optimizer.Step(lr);
    StepReport report{step, loss_sum / total, lr, norm, Seconds(start)};
    if (EvaluatesAfter(config, step)) {
      double val_sum = 0;
      const int val_total = config.eval_batches * config.dp;
      for (int i = 0; i < val_total; ++i) {
        TokenBatch batch = corpus.SampleValidation(config.seed, i, config.microbatch_size);
        PW_ASSIGN_OR_RETURN(at::Tensor loss, model.Evaluate(batch.tokens, batch.targets));
        val_sum += loss.item<double>();
      }
      report.val_loss = val_sum / val_total;
      report.has_val_loss = true;
    }
    if (on_step) on_step(report);
  }
  if (final_params != nullptr) {
    final_params->clear();
    for (auto& [name, t] : model.NamedParameters()) final_params->emplace_back(name, t.detach().clone());
  }
  return Status::Ok();
}

std::vector<ParamSummary> SummarizeParams(const NamedTensors& params) {
  std::vector<ParamSummary> out;
  for (const auto& [name, t] : params) {
    at::Tensor d = t.detach().to(at::kDouble).flatten();
    at::Tensor w = at::arange(d.numel(), at::kDouble).remainder(7.0).add(1.0);
    out.push_back({name, d.sum().item<double>(), d.abs().sum().item<double>(),
                   (d * w).sum().item<double>()});
  }
  return out;
}

}  // namespace pw
