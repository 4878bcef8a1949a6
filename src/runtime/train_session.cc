#include "runtime/train_session.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "comm/gather.h"
#include "core/paired_blocks.h"
#include "model/checkpoint.h"
#include "model/gpt.h"
#include "model/hf_checkpoint.h"
#include "os/cpu.h"
#include "runtime/bubble_prediction.h"
#include "runtime/observer_lanes.h"
#include "runtime/profile.h"
#include "runtime/train_checkpoint.h"
#include "schedule/lowering.h"
#include "search/model_costs.h"
#include "sim/simulator.h"
#include "os/atomic_file.h"

namespace pw {
namespace {


double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

Status CheckJob(const TrainJob& job, const Schedule& compute) {
  PW_RETURN_IF_ERROR(ValidateModelConfig(job.model));
  PW_RETURN_IF_ERROR(CheckFieldRanges(job));
  PW_RETURN_IF_ERROR(CheckResumeAuto(job));
  if ((!job.checkpoint_dir.empty() || !job.resume.empty()) && job.model.dropout > 0) {
    return Status::InvalidArgument("checkpoints do not save dropout generators; "
                                   "use model.dropout = 0 with --checkpoint-dir / --resume");
  }
  if (compute.num_ranks() != job.pp) {
    return Status::InvalidArgument("schedule '" + compute.name + "' has " + std::to_string(compute.num_ranks()) +
                                   " ranks but --pp is " + std::to_string(job.pp));
  }
  if (compute.num_microbatches != job.microbatches) {
    return Status::InvalidArgument("schedule '" + compute.name + "' has " +
                                   std::to_string(compute.num_microbatches) + " microbatches but --microbatches is " +
                                   std::to_string(job.microbatches));
  }
  PW_RETURN_IF_ERROR(CheckRecomputePaired(job, compute));
  return Status::Ok();
}

// Pins the rank's compute thread (LibTorch runs one intra-op thread per
// rank) to a core of its own when every local rank can have one. Gloo's
// I/O threads, already started, stay free to run on any core: pinning
// them beside the compute thread delayed message delivery until the
// compute thread yielded, and pinning whole processes measured slower
// than leaving placement to the OS on this 2-core machine (docs/runtime.md).
void PinComputeThread(const WorldInfo& world) {
  const int cpu = CpuForLocalRank(world.local_rank, world.local_world_size);
  if (cpu < 0) return;
  if (Status pinned = PinThreadToCpu(cpu); !pinned.ok()) {
    std::fprintf(stderr, "warning: rank %d runs unpinned: %s\n", world.rank, pinned.ToString().c_str());
  }
}

}  // namespace

Status CheckRecomputePaired(const TrainJob& job, const Schedule& compute) {
  if (job.recompute_paired <= 0) return Status::Ok();
  if (job.harvest_paired > 0) {
    return Status::InvalidArgument("--recompute-paired and --harvest-paired both alternate blocks of steps; "
                                   "measure one of them per run");
  }
  const std::optional<ActionKind> drop = compute.kinds.Find(kDropKindName);
  const auto drops_in = [&](const Program& p) {
    return std::any_of(p.begin(), p.end(), [&](const Action& a) { return a.kind == *drop; });
  };
  if (!drop.has_value() || std::none_of(compute.programs.begin(), compute.programs.end(), drops_in)) {
    return Status::InvalidArgument("--recompute-paired: schedule '" + compute.name +
                                   "' has no DROP action to skip; give a schedule that recomputes (e.g. a "
                                   "`plan --memory-cap` result, or examples/schedules/1f1b-recompute.pipe)");
  }
  return Status::Ok();
}

OptimizerConfig OptimizerFor(const TrainJob& job) {
  OptimizerConfig o;
  o.lr = job.lr;
  o.min_lr = job.lr / 10;
  o.grad_clip = job.grad_clip;
  o.weight_decay = job.weight_decay;
  o.warmup_steps = job.warmup;
  o.total_steps = job.decay_steps > 0 ? job.decay_steps : job.steps;
  return o;
}

bool EvaluatesAfter(const TrainJob& job, int64_t step) {
  if (job.eval_batches <= 0) return false;
  return step + 1 == job.steps || (job.eval_every > 0 && (step + 1) % job.eval_every == 0);
}

TrainSession::TrainSession(const TrainJob& job, const Schedule& compute_schedule, const TrainObserverHooks& hooks)
    : job_(job), compute_(compute_schedule), hooks_(hooks), optimizer_state_(std::make_shared<AdamWState>()) {}

TrainSession::~TrainSession() = default;

Result<std::unique_ptr<TrainSession>> TrainSession::Create(const TrainJob& job, const Schedule& compute_schedule,
                                                           const WorldInfo& world,
                                                           const TrainObserverHooks& observer) {
  PW_RETURN_IF_ERROR(CheckJob(job, compute_schedule));
  std::unique_ptr<TrainSession> session(new TrainSession(job, compute_schedule, observer));
  PW_RETURN_IF_ERROR(session->Setup(world));
  return session;
}

Status TrainSession::Setup(const WorldInfo& world) {
  world_ = world;
  PW_ASSIGN_OR_RETURN(lowered_, LowerForTraining(compute_));
  PW_ASSIGN_OR_RETURN(partition_, PartitionModel(job_.model, lowered_.num_stages(), job_.layers_per_stage));
  PW_ASSIGN_OR_RETURN(TrainCorpus corpus, TrainCorpus::Load(job_.data, job_.model.seq_len, kDefaultValidationFraction));
  // Ranks started by torchrun or mpirun come here without the launcher's checks.
  PW_RETURN_IF_ERROR(corpus.CheckVocabulary(job_.model.vocab_size, job_.data));
  corpus_ = std::make_unique<TrainCorpus>(std::move(corpus));
  context_.estimated_costs = EstimateCostModel(job_.model, partition_, job_.microbatch_size, lowered_.placement);
  SchedulePrediction prediction =
      PredictSchedule(lowered_, context_.estimated_costs, BoundaryBytes(), job_.receive_window);
  predicted_bubbles_ = prediction.bubble_ratio;
  predicted_peak_bytes_ = std::move(prediction.peak_bytes);
  predicted_activation_peak_bytes_ = std::move(prediction.activation_peak_bytes);

  ProcessGroupsOptions group_options;
  group_options.pp = job_.pp;
  group_options.timeout = std::chrono::seconds(job_.collective_timeout);
  group_options.exit_after_failure = true;  // a failed group ends the rank
  PW_ASSIGN_OR_RETURN(ProcessGroups groups, ProcessGroups::Create(world, group_options));
  groups_ = std::make_unique<ProcessGroups>(std::move(groups));
  if (job_.pin_cpus) PinComputeThread(world);
  if (groups_->grid().dp() != job_.dp) {
    return Status::InvalidArgument("world size " + std::to_string(world.world_size) +
                                   " is not pp x dp = " + std::to_string(job_.pp * job_.dp));
  }
  for (StageId s : lowered_.placement.StagesOf(groups_->pp_rank())) {
    stages_.push_back(std::make_unique<StageModule>(job_.model, partition_.stages[s], job_.seed,
                                                    job_.seed ^ (0x1000u + static_cast<uint64_t>(s))));
  }
  return CreateObserver(world);
}

// After Resume: the AdamW objects adopt the (restored) moments and step
// count when they are built, so the executor that owns them comes last.
Status TrainSession::CreateExecutor() {
  std::vector<StageModule*> stage_ptrs;
  for (const auto& s : stages_) stage_ptrs.push_back(s.get());
  ExecutorOptions exec_options;
  exec_options.idle_listener = observer_.get();
  exec_options.rank = groups_->pp_rank();
  exec_options.pipeline = &groups_->pipeline();
  exec_options.data_parallel = &groups_->data_parallel();
  exec_options.microbatch_size = job_.microbatch_size;
  exec_options.seq_len = job_.model.seq_len;
  exec_options.d_model = job_.model.d_model;
  exec_options.receive_window = job_.receive_window;
  exec_options.optimizer = OptimizerFor(job_);
  exec_options.optimizer.state = optimizer_state_;
  keep_timeline_ = !job_.trace.empty() || !job_.profile_out.empty();
  // The first steps' timeline re-predicts the bubbles when later steps
  // remain to compare with.
  predicts_from_timeline_ = job_.steps - first_step_ > kPredictionSteps;
  exec_options.record_timeline = keep_timeline_ || observer_ != nullptr || predicts_from_timeline_;
  PW_ASSIGN_OR_RETURN(executor_, Executor::Create(std::move(lowered_), stage_ptrs, exec_options));
  return Status::Ok();
}

// The rank's observer (bubble harvesting), before the executor that calls it.
Status TrainSession::CreateObserver(const WorldInfo& world) {
  if (!hooks_.make) return Status::Ok();
  if (hooks_.profile_steps < 2) {
    return Status::InvalidArgument("observer profile_steps must be >= 2 (the first step is warm-up)");
  }
  context_.world_rank = world.rank;
  context_.world_size = world.world_size;
  context_.local_rank = world.local_rank;
  context_.pp_rank = groups_->pp_rank();
  context_.dp_rank = groups_->dp_rank();
  context_.job = &job_;
  context_.compute = &compute_;
  context_.lowered = &lowered_;
  PW_ASSIGN_OR_RETURN(observer_, hooks_.make(context_));
  context_.compute = nullptr;
  context_.lowered = nullptr;
  context_.job = nullptr;
  return Status::Ok();
}

// --resume auto: job.checkpoint_dir when it holds a manifest, "" (step 0)
// when it holds none. A manifest that is there but unreadable is an error,
// never a silent start from scratch. Every rank decides for itself (ranks
// of an external launcher share no launcher), then the world checks that
// all decided alike: a host that sees another directory (no shared file
// system) stops the job instead of training from another step.
Result<std::string> TrainSession::ResolveAutoResume() {
  const std::string& dir = job_.checkpoint_dir;
  int64_t step = -1;  // no checkpoint
  std::error_code ec;
  const bool has_manifest = std::filesystem::exists(std::filesystem::path(dir) / kCheckpointManifest, ec);
  if (ec) {
    return Status::IoError("--resume auto cannot look into --checkpoint-dir " + dir + ": " + ec.message());
  }
  if (has_manifest) {
    Result<CheckpointManifest> found = ReadCheckpointManifest(dir);
    if (!found.ok()) {
      return Status(found.status().code(), found.status().message() +
                                               " (--resume auto will not start from step 0 over it: repair or "
                                               "move the directory, or give --resume DIR explicitly)");
    }
    step = found->step;
  }
  const double steps = static_cast<double>(step);
  at::Tensor agree = at::tensor({steps, steps * steps, 1.0}, at::kDouble);
  PW_RETURN_IF_ERROR(groups_->world().AllReduce({agree}, ReduceKind::kSum).Wait());
  const double n = agree[2].item<double>(), sum = agree[0].item<double>(), sum_sq = agree[1].item<double>();
  if (sum != n * steps || sum_sq != n * steps * steps) {
    return Status::FailedPrecondition(
        "--resume auto: the ranks see different checkpoints in " + dir + " (this rank, world rank " +
        std::to_string(world_.rank) + ", sees " + (step < 0 ? std::string("none") : "step " + std::to_string(step)) +
        "); --checkpoint-dir must be one directory every rank sees (a shared file system)");
  }
  if (world_.rank == 0) {
    std::printf("--resume auto: %s\n", step < 0 ? ("no checkpoint in " + dir + " yet: from step 0").c_str()
                                                : ("the checkpoint at step " + std::to_string(step) + " in " + dir).c_str());
    std::fflush(stdout);
  }
  return step < 0 ? std::string() : dir;
}

Status TrainSession::Resume() {
  PW_CHECK(executor_ == nullptr);  // once, before the first Step
  first_step_ = step_ = optimizer_steps_ = 0;
  std::string from = job_.resume;
  if (from == "auto") {
    PW_ASSIGN_OR_RETURN(from, ResolveAutoResume());
  }
  if (from.empty()) {
    // A fresh start from a Hugging Face model: its weights replace the init.
    if (!job_.model_dir.empty()) {
      for (auto& s : stages_) PW_RETURN_IF_ERROR(InitFromHfModel(job_.model_dir, job_.model, s->NamedParameters()));
    }
    return CreateExecutor();
  }
  PW_ASSIGN_OR_RETURN(CheckpointManifest found, ReadCheckpointManifest(from));
  PW_RETURN_IF_ERROR(CheckResumable(from, found, ManifestFor(job_, partition_, 0)));
  if (found.step > job_.steps) {
    return Status::InvalidArgument("--resume " + from + " is at step " + std::to_string(found.step) +
                                   ", past --steps " + std::to_string(job_.steps));
  }
  for (auto& s : stages_) PW_RETURN_IF_ERROR(LoadCheckpointStage(from, found, *s, *optimizer_state_));
  optimizer_state_->initial_steps = optimizer_steps_ = found.optimizer_steps;
  first_step_ = step_ = found.step;
  return CreateExecutor();
}

Result<StepReport> TrainSession::Step() {
  PW_CHECK(!done() && executor_ != nullptr);
  const int64_t step = step_;
  const int m = job_.microbatches;
  const auto start = std::chrono::steady_clock::now();
  std::vector<TokenBatch> batches;
  for (int mb = 0; mb < m; ++mb) {
    batches.push_back(corpus_->Sample(job_.seed, step, static_cast<int64_t>(groups_->dp_rank()) * m + mb,
                                      job_.microbatch_size));
  }
  // Every rank derives the phase from (step, K, seed): they agree.
  const bool recompute_held = job_.recompute_paired > 0 &&
                              PairedPhaseOf(step, job_.recompute_paired, job_.seed) == PairedPhase::kHeld;
  executor_->HoldRecompute(recompute_held);
  PW_ASSIGN_OR_RETURN(StepOutcome outcome, executor_->RunStep(step, batches));
  PW_ASSIGN_OR_RETURN(const bool skipped, CheckFinite(step, outcome));
  optimizer_steps_ += skipped ? 0 : 1;
  if (observer_ != nullptr && keep_timeline_) step_origins_.emplace(step, executor_->step_origin());
  if (observer_ != nullptr && !profiled_ && step + 1 - first_step_ >= hooks_.profile_steps) {
    PW_RETURN_IF_ERROR(ProfileForObserver());
  }
  if (predicts_from_timeline_ && !predicted_from_timeline_ && step + 1 - first_step_ >= kPredictionSteps) {
    PW_RETURN_IF_ERROR(PredictFromTimeline());
  }
  StopRecordingWhenDone();
  StepReport report{step, outcome.loss, outcome.lr, outcome.grad_norm, Seconds(start)};
  report.update_skipped = skipped;
  report.recompute_held = recompute_held;
  report.tokens_per_s = static_cast<double>(m) * job_.microbatch_size * job_.model.seq_len * job_.dp /
                        std::max(report.seconds, 1e-9);
  report.bubble_ratio_measured = outcome.bubble_ratio;
  report.bubble_ratio_predicted = predicted_bubbles_;
  report.bubble_predicted_from_timeline = predicted_from_timeline_;
  measured_peak_bytes_.resize(outcome.peak_allocated_bytes.size(), 0.0);
  for (size_t r = 0; r < outcome.peak_allocated_bytes.size(); ++r) {
    measured_peak_bytes_[r] = std::max(measured_peak_bytes_[r], outcome.peak_allocated_bytes[r]);
  }
  report.peak_allocated_bytes = std::move(outcome.peak_allocated_bytes);
  report.peak_resident_bytes = std::move(outcome.peak_resident_bytes);
  report.offloaded_bytes = std::move(outcome.offloaded_bytes);
  report.offload_seconds = std::move(outcome.offload_seconds);
  report.peak_bytes_predicted = predicted_peak_bytes_;
  if (EvaluatesAfter(job_, step)) {
    std::vector<TokenBatch> val;
    for (int i = 0; i < job_.eval_batches; ++i) {
      val.push_back(corpus_->SampleValidation(
          job_.seed, static_cast<int64_t>(groups_->dp_rank()) * job_.eval_batches + i, job_.microbatch_size));
    }
    PW_ASSIGN_OR_RETURN(report.val_loss, executor_->Evaluate(val));
    report.has_val_loss = true;
  }
  ++step_;
  PW_RETURN_IF_ERROR(SaveCheckpointIfDue());
  return report;
}

// Megatron's NaN check. The loss and the gradient norm reach every rank
// through all-reduces, so every rank takes the same branch here and all or
// none enter the collective that names the stages with non-finite
// gradients: no rank is left waiting. The executor applied no update with
// a non-finite gradient norm. Returns whether the step's update was skipped.
Result<bool> TrainSession::CheckFinite(int64_t step, const StepOutcome& outcome) {
  const bool loss_finite = std::isfinite(outcome.loss), norm_finite = std::isfinite(outcome.grad_norm);
  if (loss_finite && norm_finite) return false;
  const int num_stages = static_cast<int>(partition_.stages.size());
  at::Tensor bad = at::zeros({num_stages}, at::kDouble);
  for (const auto& s : stages_) {
    if (!std::isfinite(SquaredGradNorm(s->Parameters()))) bad[s->stage()] = 1.0;
  }
  PW_RETURN_IF_ERROR(groups_->world().AllReduce({bad}, ReduceKind::kSum).Wait());
  std::string stages;
  int num_bad = 0;
  for (int s = 0; s < num_stages; ++s) {
    if (bad[s].item<double>() > 0) stages += (num_bad++ == 0 ? "" : ", ") + std::to_string(s);
  }
  std::string what = "step " + std::to_string(step) + ": ";
  if (!loss_finite) {
    what += "the loss is " + std::to_string(outcome.loss) + " (computed in stage " + std::to_string(num_stages - 1) + ")";
  }
  if (!norm_finite) {
    what += std::string(loss_finite ? "" : " and ") + "the gradient norm is " + std::to_string(outcome.grad_norm);
    if (num_bad > 0) what += std::string(" (gradients not finite in stage") + (num_bad > 1 ? "s " : " ") + stages + ")";
  }
  if (job_.on_nonfinite == "skip" && !norm_finite) {
    if (world_.rank == 0) {
      std::fprintf(stderr, "warning: %s; the step's update was skipped (--on-nonfinite skip)\n", what.c_str());
    }
    return true;
  }
  if (norm_finite) {  // a non-finite loss with finite gradients: the update was applied
    return Status::FailedPrecondition("training stopped at " + what + " while the gradients were finite, so the "
                                      "update was applied; lower --lr or clip gradients with --grad-clip");
  }
  return Status::FailedPrecondition("training stopped at " + what + "; the weights were not updated. Lower --lr, "
                                    "clip gradients with --grad-clip, or skip such steps with --on-nonfinite skip");
}

// After the observer's profile steps: the measured costs of the whole
// pipeline. Every pipeline rank reaches this after the same step, so the
// gather is collective.
Status TrainSession::ProfileForObserver() {
  profiled_ = true;
  PW_ASSIGN_OR_RETURN(auto spans, GatherTimelines(&groups_->pipeline(), groups_->pp_rank(), executor_->timeline()));
  Result<CostModel> measured = MeasuredProfile(spans, executor_->schedule().num_stages());
  if (measured.ok()) {
    for (size_t s = 0; s < measured->stages.size(); ++s) {
      measured->stages[s].activation_bytes = context_.estimated_costs.stages[s].activation_bytes;
    }
    measured->static_bytes = context_.estimated_costs.static_bytes;
    observer_->OnCostsMeasured(*measured);
  }
  return Status::Ok();
}

// After the first kPredictionSteps steps: the bubble prediction again,
// with every cost measured on them (the first step left out as warm-up):
// compute per stage and kind with its jitter (ExpectedBubbles), and what
// the executor spends besides (runtime/action_overheads.h). Collective over
// the pipeline group, like ProfileForObserver. A timeline that cannot be
// costed keeps the estimate.
Status TrainSession::PredictFromTimeline() {
  PW_ASSIGN_OR_RETURN(auto spans, GatherTimelines(&groups_->pipeline(), groups_->pp_rank(), executor_->timeline()));
  const Schedule& lowered = executor_->schedule();
  ProfileOptions options;
  options.output_bytes = BoundaryBytes();
  options.recompute_kind = lowered.kinds.Find(kRecomputeKindName);
  Result<CostModel> measured = MeasuredProfile(spans, lowered.num_stages(), options);
  Result<double> expected =
      measured.ok() ? ExpectedBubbles(lowered, *measured, CollectComputeSamples(spans, first_step_ + 1))
                    : Result<double>(measured.status());
  // Either way this was the one attempt: recording may stop.
  predicts_from_timeline_ = expected.ok();
  predicted_from_timeline_ = expected.ok();
  if (expected.ok()) predicted_bubbles_ = *expected;
  return Status::Ok();
}

void TrainSession::StopRecordingWhenDone() {
  if (keep_timeline_) return;
  if (observer_ != nullptr && !profiled_) return;
  if (predicts_from_timeline_ && !predicted_from_timeline_) return;
  executor_->SetRecordTimeline(false);
}

double TrainSession::BoundaryBytes() const {
  return 4.0 * job_.microbatch_size * job_.model.seq_len * job_.model.d_model;
}

// The estimated activation bytes of every stage, times its rank's measured
// activations over the predicted ones: (measured peak - predicted peak +
// predicted activation peak) / predicted activation peak, i.e. the static
// bytes and buffers are taken as estimated and the difference is charged to
// the activations. A rank whose predicted activations are small (a
// recomputing schedule), or whose ratio falls outside [0.25, 4] (a peak set
// by something else), keeps the estimate.
std::vector<double> TrainSession::CalibratedActivationBytes() const {
  std::vector<double> bytes;
  for (const StageCost& s : context_.estimated_costs.stages) bytes.push_back(s.activation_bytes);
  const Placement& placement = compute_.placement;  // lowered_ went to the executor
  if (bytes.size() != static_cast<size_t>(placement.num_stages())) return bytes;
  for (RankId r = 0; r < placement.num_ranks(); ++r) {
    if (static_cast<size_t>(r) >= measured_peak_bytes_.size() || static_cast<size_t>(r) >= predicted_peak_bytes_.size() ||
        static_cast<size_t>(r) >= predicted_activation_peak_bytes_.size()) {
      continue;
    }
    double largest_stage = 0;
    for (StageId s : placement.StagesOf(r)) largest_stage = std::max(largest_stage, bytes[s]);
    const double predicted = predicted_activation_peak_bytes_[r];
    if (predicted < 0.5 * largest_stage || predicted <= 0) continue;
    const double ratio = (measured_peak_bytes_[r] - predicted_peak_bytes_[r] + predicted) / predicted;
    if (!(ratio >= 0.25 && ratio <= 4)) continue;
    for (StageId s : placement.StagesOf(r)) bytes[s] *= ratio;
  }
  return bytes;
}

Status TrainSession::SaveCheckpointIfDue() {
  if (job_.checkpoint_dir.empty()) return Status::Ok();
  const bool due = step_ == job_.steps || (job_.checkpoint_every > 0 && step_ % job_.checkpoint_every == 0);
  if (!due) return Status::Ok();
  return SaveTrainingCheckpoint(job_, partition_, step_, optimizer_steps_, world_, *groups_, stages_,
                                *optimizer_state_);
}

Status TrainSession::Finish(std::vector<std::string>* observer_reports) {
  MeasuredOutputs measured;
  measured.trace_path = job_.trace;
  measured.profile_path = job_.profile_out;
  measured.profile.output_bytes = BoundaryBytes();
  measured.profile.model = job_.model;  // the profile's per-layer costs (plan --cost-file)
  measured.profile.partition = partition_;
  // Memory, so that `plan --cost-file` can plan under a cap in bytes: the
  // model's estimates, activations scaled per rank to the measured peaks.
  measured.profile.activation_bytes = CalibratedActivationBytes();
  measured.profile.static_bytes = context_.estimated_costs.static_bytes;
  measured.trace.title = "pipewright train " + compute_.name;
  std::string report;
  if (observer_ != nullptr) {
    report = observer_->Finish();
    if (!job_.trace.empty()) {
      // The trace with the observers' lanes: written here instead of by WriteMeasuredOutputs.
      PW_RETURN_IF_ERROR(WriteTraceWithObserverLanes(observer_->LaneEvents(), measured.trace));
      measured.trace_path.clear();
    }
  }
  PW_RETURN_IF_ERROR(WriteMeasuredOutputs(*executor_, &groups_->pipeline(), world_.rank == 0, measured));
  if (observer_ != nullptr) {
    PW_ASSIGN_OR_RETURN(auto reports, GatherStrings(groups_->world(), report));
    if (observer_reports != nullptr && world_.rank == 0) *observer_reports = std::move(reports);
  }
  return Status::Ok();
}

Status TrainSession::WriteTraceWithObserverLanes(const std::vector<RankObserver::LaneEvent>& events,
                                                 const MeasuredTraceOptions& trace_options) {
  const int rank = groups_->pp_rank();
  PW_ASSIGN_OR_RETURN(auto spans, GatherTimelines(&groups_->pipeline(), rank, executor_->timeline()));
  std::vector<std::string> names;
  const Timeline lane = ObserverLane(events, step_origins_, &names);
  std::string joined;
  for (const std::string& n : names) joined += n + "\n";
  PW_ASSIGN_OR_RETURN(auto lanes, GatherTimelines(&groups_->pipeline(), rank, lane));
  PW_ASSIGN_OR_RETURN(auto lane_names, GatherStrings(groups_->pipeline(), joined));
  if (world_.rank != 0) return Status::Ok();
  std::vector<std::vector<std::string>> split(lane_names.size());
  for (size_t r = 0; r < lane_names.size(); ++r) {
    size_t start = 0, end;
    while ((end = lane_names[r].find('\n', start)) != std::string::npos) {
      split[r].push_back(lane_names[r].substr(start, end - start));
      start = end + 1;
    }
  }
  const std::string trace =
      AddObserverLanes(RenderMeasuredTrace(executor_->schedule(), spans, trace_options), spans, lanes, split);
  return WriteFile(job_.trace, trace, Durability::kAtomic).WithContext("--trace");
}

NamedTensors TrainSession::Parameters() const {
  NamedTensors params;
  for (const auto& s : stages_) {
    for (auto& [name, t] : s->NamedParameters()) {
      // The head's copy of a tied embedding is the embedding, once more.
      if (name == "head.tied_weight") continue;
      params.emplace_back(name, t.detach().clone());
    }
  }
  return params;
}

}  // namespace pw
