#include "runtime/trainer.h"

#include <ATen/ATen.h>

#include <chrono>
#include <cmath>

#include "model/gpt.h"
#include "model/partitioner.h"
#include "model/stage_module.h"
#include "runtime/data.h"
#include "runtime/optimizer.h"
#include "dsl/schedule_source.h"
#include "schedule/generators.h"
#include "search/auto_schedule.h"

namespace pw {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// A schedule file's `layers` directive is the split it was planned for
// (`plan -o`): the job trains with it unless layers_per_stage says
// otherwise, which is an error rather than a silent choice of one.
Status AdoptScheduleLayers(TrainJob& job, const dsl::LoadedSchedule& loaded) {
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
  if (!job.layers_per_stage.empty()) {
    Result<std::vector<int>> given = ParseLayersPerStage(job.layers_per_stage);
    if (!given.ok() || *given != loaded.layers_per_stage) {
      return Status::InvalidArgument("--layers-per-stage " + job.layers_per_stage + " contradicts " +
                                     loaded.layers_where + "; drop --layers-per-stage or the line");
    }
  }
  Result<ModelPartition> partition = PartitionModel(job.model, loaded.schedule.num_stages(), list);
  if (!partition.ok()) return partition.status().WithContext(loaded.layers_where);
  job.layers_per_stage = list;
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

Result<Schedule> LoadTrainingSchedule(TrainJob& job, bool pp_given, bool microbatches_given) {
  if (job.schedule == "auto") {
    PW_ASSIGN_OR_RETURN(ScheduleChoice choice,
                        ChooseScheduleBySimulation(job.model, job.pp, job.microbatches, job.layers_per_stage));
    job.schedule = choice.family;
    job.chunks = 0;
    job.schedule_note = "schedule auto: " + choice.Describe();
  }
  dsl::ScheduleSource source;
  source.schedule = job.schedule;
  source.ranks = job.pp;
  source.microbatches = job.microbatches;
  source.chunks = job.chunks;
  source.ranks_given = pp_given;
  source.microbatches_given = microbatches_given;
  PW_ASSIGN_OR_RETURN(dsl::LoadedSchedule loaded, dsl::LoadScheduleWithLayers(source));
  PW_RETURN_IF_ERROR(AdoptScheduleLayers(job, loaded));
  job.pp = loaded.schedule.num_ranks();
  job.microbatches = loaded.schedule.num_microbatches;
  return std::move(loaded.schedule);
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
  }
  PW_RETURN_IF_ERROR(session->Finish(observer_reports));
  if (final_params != nullptr) *final_params = session->Parameters();
  return Status::Ok();
}

Status RunReferenceTraining(const TrainJob& config, const StepCallback& on_step,
                            NamedTensors* final_params) {
  PW_RETURN_IF_ERROR(ValidateModelConfig(config.model));
  PW_RETURN_IF_ERROR(CheckFieldRanges(config));
  PW_ASSIGN_OR_RETURN(ByteCorpus corpus,
                      ByteCorpus::Load(config.data, config.model.seq_len, kDefaultValidationFraction));
  StageModule model(config.model, WholeModelSpan(config.model), config.seed);
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
