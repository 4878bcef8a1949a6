#include "runtime/trainer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "comm/comm_group.h"
#include "comm/process_groups.h"
#include "model/gpt.h"
#include "model/partitioner.h"
#include "model/stage_module.h"
#include "model/checkpoint.h"
#include "runtime/data.h"
#include "runtime/executor.h"
#include "runtime/profile.h"
#include "schedule/generators.h"
#include "schedule/lowering.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"

namespace pw {
namespace {

Status CheckConfig(const TrainConfig& c) {
  PW_RETURN_IF_ERROR(ValidateModelConfig(c.model));
  if (c.pp < 1 || c.dp < 1) return Status::InvalidArgument("--pp and --dp must be >= 1");
  if (c.microbatches < 1) return Status::InvalidArgument("--microbatches must be >= 1");
  if (c.microbatch_size < 1) return Status::InvalidArgument("microbatch size must be >= 1");
  if (c.steps < 0) return Status::InvalidArgument("--steps must be >= 0");
  if (c.checkpoint_every < 0) return Status::InvalidArgument("--checkpoint-every must be >= 0");
  if ((!c.checkpoint_dir.empty() || !c.resume_dir.empty()) && c.model.dropout > 0) {
    return Status::InvalidArgument("checkpoints do not save dropout generators; "
                                   "use model.dropout = 0 with --checkpoint-dir / --resume");
  }
  return Status::Ok();
}

// The manifest this run would write after `step` completed steps.
CheckpointManifest ManifestFor(const TrainConfig& c, const ModelPartition& partition,
                               const OptimizerConfig& optimizer, int64_t step) {
  CheckpointManifest m;
  m.model_config = FormatModelConfig(c.model);
  m.schedule = c.schedule;
  m.pp = c.pp;
  m.dp = c.dp;
  m.microbatches = c.microbatches;
  m.microbatch_size = c.microbatch_size;
  m.seed = c.seed;
  m.step = step;
  m.optimizer_steps = step;  // every stage's AdamW steps once per training step
  m.optimizer = optimizer;
  m.optimizer.state = nullptr;
  m.next_lr = LearningRate(optimizer, step);
  for (const StageSpan& span : partition.stages) {
    m.stages.push_back({span.stage, span.first_block, span.num_blocks, span.has_embedding,
                        span.has_head, CheckpointStageFile(span.stage)});
  }
  return m;
}

// Collective over the world: world rank 0 removes the old manifest, the dp
// rank 0 of each pipeline writes its stages, world rank 0 writes the
// manifest after a barrier. Blocks.
Status SaveCheckpoint(const TrainConfig& c, const ModelPartition& partition,
                      const OptimizerConfig& optimizer, int64_t completed_steps,
                      const WorldInfo& world, ProcessGroups& groups,
                      const std::vector<std::unique_ptr<StageModule>>& stages,
                      const AdamWState& state) {
  const std::string& dir = c.checkpoint_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create --checkpoint-dir " + dir + ": " + ec.message());
  if (world.rank == 0) {
    std::filesystem::remove(std::filesystem::path(dir) / kCheckpointManifest, ec);
  }
  PW_RETURN_IF_ERROR(groups.world().Barrier());
  if (groups.dp_rank() == 0) {
    for (const auto& s : stages) PW_RETURN_IF_ERROR(WriteCheckpointStage(dir, *s, state));
  }
  PW_RETURN_IF_ERROR(groups.world().Barrier());
  if (world.rank == 0) {
    PW_RETURN_IF_ERROR(
        WriteCheckpointManifest(dir, ManifestFor(c, partition, optimizer, completed_steps)));
  }
  return Status::Ok();
}

OptimizerConfig ResolvedOptimizer(const TrainConfig& c) {
  OptimizerConfig o = c.optimizer;
  if (o.total_steps <= 0) o.total_steps = c.steps;
  return o;
}

bool EvaluatesAfter(const TrainConfig& c, int64_t step) {
  if (c.eval_batches <= 0) return false;
  return step + 1 == c.steps || (c.eval_every > 0 && (step + 1) % c.eval_every == 0);
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Every member's string on every member (two all-reduces of disjoint slots;
// bytes travel as doubles, exact). Collective.
Result<std::vector<std::string>> GatherStrings(CommGroup& group, const std::string& mine) {
  const int n = group.size(), r = group.rank();
  if (n <= 1) return std::vector<std::string>{mine};
  at::Tensor lengths = at::zeros({n}, at::kDouble);
  lengths[r] = static_cast<double>(mine.size());
  PW_RETURN_IF_ERROR(group.AllReduce({lengths}, ReduceKind::kSum).Wait());
  const int64_t longest = std::max<int64_t>(1, static_cast<int64_t>(lengths.max().item<double>()));
  at::Tensor data = at::zeros({n, longest}, at::kDouble);
  {
    auto acc = data.accessor<double, 2>();
    for (size_t i = 0; i < mine.size(); ++i) acc[r][static_cast<int64_t>(i)] = static_cast<unsigned char>(mine[i]);
  }
  PW_RETURN_IF_ERROR(group.AllReduce({data}, ReduceKind::kSum).Wait());
  std::vector<std::string> all(n);
  auto acc = data.accessor<double, 2>();
  for (int k = 0; k < n; ++k) {
    const int64_t len = static_cast<int64_t>(lengths[k].item<double>());
    for (int64_t i = 0; i < len; ++i) all[k].push_back(static_cast<char>(static_cast<int>(acc[k][i])));
  }
  return all;
}

// Rough sizes for placement before anything is measured (RankContext).
// Activations of one microbatch per block: Megatron's estimate for fp16
// (s*b*h*(34 + 5*a*s/h) bytes), doubled for float32; the head holds the
// logits and their softmax (2 * T * V floats per sequence).
double EstimateActivationBytes(const ModelConfig& m, const StageSpan& span, int microbatch_size) {
  const double s = m.seq_len, b = microbatch_size, h = m.d_model, a = m.n_heads;
  double bytes = span.num_blocks * 2.0 * s * b * h * (34.0 + 5.0 * a * s / h);
  if (span.has_embedding) bytes += 4.0 * s * b * h;
  if (span.has_head) bytes += 4.0 * 2.0 * s * b * m.vocab_size;
  return bytes;
}

double EstimateParameters(const ModelConfig& m, const StageSpan& span) {
  const double d = m.d_model, r = m.mlp_ratio;
  double params = span.num_blocks * ((4 + 2 * r) * d * d + (9 + r) * d);
  if (span.has_embedding) params += (m.vocab_size + m.seq_len) * d;
  if (span.has_head) params += 2 * d + d * m.vocab_size;
  return params;
}

// The trace with each rank's observer lane ("rank N side tasks", below the
// rank's own lane) added. `lanes[r]`: rank r's events as spans of its steps
// (stage = index into names[r]).
std::string AddObserverLanes(const std::string& trace, const std::vector<std::vector<TimelineSpan>>& ranks,
                             const std::vector<std::vector<TimelineSpan>>& lanes,
                             const std::vector<std::vector<std::string>>& names) {
  nlohmann::json j = nlohmann::json::parse(trace, nullptr, false);
  if (!j.is_object() || !j.contains("traceEvents")) return trace;
  std::map<int64_t, double> origin_of_step;  // as RenderMeasuredTrace places steps
  for (const auto& spans : ranks) {
    for (const TimelineSpan& s : spans) origin_of_step.emplace(s.step, s.step_origin_us);
    if (!origin_of_step.empty()) break;
  }
  auto& events = j["traceEvents"];
  const int n = static_cast<int>(ranks.size());
  for (auto& e : events) {  // rank r's lane sorts at 2r, its side lane at 2r + 1
    if (e.value("ph", "") == "M" && e.value("name", "") == "thread_sort_index") {
      e["args"]["sort_index"] = 2 * e.value("tid", 0);
    }
  }
  for (int r = 0; r < static_cast<int>(lanes.size()) && r < n; ++r) {
    if (lanes[r].empty()) continue;
    const int tid = n + r;
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", tid},
                      {"args", {{"name", "rank " + std::to_string(r) + " side tasks"}}}});
    events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", 0}, {"tid", tid},
                      {"args", {{"sort_index", 2 * r + 1}}}});
    for (const TimelineSpan& s : lanes[r]) {
      auto it = origin_of_step.find(s.step);
      if (it == origin_of_step.end()) continue;
      const std::string name = s.stage >= 0 && s.stage < static_cast<int>(names[r].size())
                                   ? names[r][s.stage] : "side task";
      events.push_back({{"ph", "X"}, {"name", name}, {"cat", "side_task"}, {"pid", 0}, {"tid", tid},
                        {"ts", it->second + s.start_us}, {"dur", s.dur_us},
                        {"args", {{"step", s.step}, {"state", "RUNNING"}}}});
    }
  }
  return j.dump() + "\n";
}

}  // namespace

Result<Schedule> GenerateTrainingSchedule(const TrainConfig& config) {
  GeneratorOptions options;
  options.num_ranks = config.pp;
  options.num_microbatches = config.microbatches;
  options.chunks = config.chunks;
  return GenerateSchedule(config.schedule, options);
}

Status RunPipelineRank(const TrainConfig& config, const Schedule& compute_schedule,
                       const WorldInfo& world, const StepCallback& on_step,
                       NamedTensors* final_params, std::vector<std::string>* observer_reports) {
  PW_RETURN_IF_ERROR(CheckConfig(config));
  if (compute_schedule.num_ranks() != config.pp) {
    return Status::InvalidArgument("schedule '" + compute_schedule.name + "' has " +
                                   std::to_string(compute_schedule.num_ranks()) +
                                   " ranks but --pp is " + std::to_string(config.pp));
  }
  if (compute_schedule.num_microbatches != config.microbatches) {
    return Status::InvalidArgument("schedule '" + compute_schedule.name + "' has " +
                                   std::to_string(compute_schedule.num_microbatches) +
                                   " microbatches but --microbatches is " +
                                   std::to_string(config.microbatches));
  }
  PW_ASSIGN_OR_RETURN(Schedule synced, AddGradientSync(StripToCompute(compute_schedule)));
  PW_ASSIGN_OR_RETURN(Schedule lowered, InsertCommunication(synced));
  PW_ASSIGN_OR_RETURN(ModelPartition partition,
                      PartitionModel(config.model, lowered.num_stages(), config.layers_per_stage));
  PW_ASSIGN_OR_RETURN(ByteCorpus corpus,
                      ByteCorpus::Load(config.data, config.model.seq_len, config.val_fraction));

  // Predicted bubbles: the simulator on the compute schedule, with each
  // stage's forward cost from the partitioner's FLOP estimate (B = 2F,
  // I = W = F) and free communication.
  double predicted_bubbles = 0;
  {
    CostModel costs;
    costs.stages.clear();
    for (const StageSpan& span : partition.stages) {
      StageCost c;
      c.forward = span.cost;
      c.backward = 2 * span.cost;
      c.backward_input = span.cost;
      c.backward_weight = span.cost;
      costs.stages.push_back(c);
    }
    Schedule compute = StripToCompute(compute_schedule);
    if (costs.Resolve(compute).ok()) {
      SimOptions sim_options;
      sim_options.record_spans = false;
      sim_options.record_bubbles = false;
      Result<SimResult> sim = Simulate(compute, costs, sim_options);
      if (sim.ok()) predicted_bubbles = sim->bubble_ratio;
    }
  }

  ProcessGroupsOptions group_options;
  group_options.pp = config.pp;
  PW_ASSIGN_OR_RETURN(ProcessGroups groups, ProcessGroups::Create(world, group_options));
  if (groups.grid().dp() != config.dp) {
    return Status::InvalidArgument("world size " + std::to_string(world.world_size) +
                                   " is not pp x dp = " + std::to_string(config.pp * config.dp));
  }
  const int rank = groups.pp_rank();
  std::vector<std::unique_ptr<StageModule>> stages;
  std::vector<StageModule*> stage_ptrs;
  for (StageId s : lowered.placement.StagesOf(rank)) {
    stages.push_back(std::make_unique<StageModule>(config.model, partition.stages[s], config.seed,
                                                   config.seed ^ (0x1000u + static_cast<uint64_t>(s))));
    stage_ptrs.push_back(stages.back().get());
  }
  auto optimizer_state = std::make_shared<AdamWState>();
  int64_t first_step = 0;
  if (!config.resume_dir.empty()) {
    PW_ASSIGN_OR_RETURN(CheckpointManifest found, ReadCheckpointManifest(config.resume_dir));
    PW_RETURN_IF_ERROR(CheckResumable(config.resume_dir, found,
                                      ManifestFor(config, partition, ResolvedOptimizer(config), 0)));
    if (found.step > config.steps) {
      return Status::InvalidArgument("--resume " + config.resume_dir + " is at step " +
                                     std::to_string(found.step) + ", past --steps " +
                                     std::to_string(config.steps));
    }
    for (auto& s : stages) {
      PW_RETURN_IF_ERROR(LoadCheckpointStage(config.resume_dir, *s, *optimizer_state));
    }
    optimizer_state->initial_steps = found.optimizer_steps;
    first_step = found.step;
  }
  // The rank's observer (bubble harvesting), before the executor that calls it.
  std::unique_ptr<RankObserver> observer;
  RankContext context;
  if (config.observer.make) {
    if (config.observer.profile_steps < 2) {
      return Status::InvalidArgument("observer profile_steps must be >= 2 (the first step is warm-up)");
    }
    context.world_rank = world.rank;
    context.world_size = world.world_size;
    context.local_rank = world.local_rank;
    context.pp_rank = rank;
    context.dp_rank = groups.dp_rank();
    context.config = &config;
    context.compute = &compute_schedule;
    context.lowered = &lowered;
    context.rank_static_bytes.assign(lowered.num_ranks(), 0.0);
    for (const StageSpan& span : partition.stages) {
      context.stage_flops.push_back(span.cost);
      context.stage_activation_bytes.push_back(
          EstimateActivationBytes(config.model, span, config.microbatch_size));
      context.rank_static_bytes[lowered.placement.RankOf(span.stage)] +=
          16.0 * EstimateParameters(config.model, span);
    }
    PW_ASSIGN_OR_RETURN(observer, config.observer.make(context));
  }
  ExecutorOptions exec_options;
  exec_options.idle_listener = observer.get();
  exec_options.rank = rank;
  exec_options.pipeline = &groups.pipeline();
  exec_options.data_parallel = &groups.data_parallel();
  exec_options.microbatch_size = config.microbatch_size;
  exec_options.seq_len = config.model.seq_len;
  exec_options.d_model = config.model.d_model;
  exec_options.optimizer = ResolvedOptimizer(config);
  exec_options.optimizer.state = optimizer_state;
  const bool keep_timeline = !config.trace_out.empty() || !config.profile_out.empty();
  exec_options.record_timeline = keep_timeline || observer != nullptr;
  PW_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                      Executor::Create(std::move(lowered), stage_ptrs, exec_options));

  const int m = config.microbatches;
  bool profiled = false;
  std::map<int64_t, Timeline::Clock::time_point> step_origins;  // for the observer lanes
  for (int64_t step = first_step; step < config.steps; ++step) {
    auto start = std::chrono::steady_clock::now();
    std::vector<TokenBatch> batches;
    for (int mb = 0; mb < m; ++mb) {
      batches.push_back(corpus.Sample(config.seed, step,
                                      static_cast<int64_t>(groups.dp_rank()) * m + mb,
                                      config.microbatch_size));
    }
    PW_ASSIGN_OR_RETURN(StepOutcome outcome, executor->RunStep(step, batches));
    if (observer != nullptr && keep_timeline) step_origins.emplace(step, executor->step_origin());
    if (observer != nullptr && !profiled && step + 1 - first_step >= config.observer.profile_steps) {
      // Every pipeline rank reaches this after the same step: the gather is collective.
      profiled = true;
      PW_ASSIGN_OR_RETURN(auto spans, GatherTimelines(&groups.pipeline(), rank, executor->timeline()));
      Result<CostModel> measured = MeasuredProfile(spans, executor->schedule().num_stages());
      if (measured.ok()) {
        for (size_t s = 0; s < measured->stages.size(); ++s) {
          measured->stages[s].activation_bytes = context.stage_activation_bytes[s];
        }
        measured->static_bytes = context.rank_static_bytes;
        observer->OnCostsMeasured(*measured);
      }
      if (!keep_timeline) executor->SetRecordTimeline(false);
    }
    StepReport report{step, outcome.loss, outcome.lr, outcome.grad_norm, Seconds(start)};
    report.tokens_per_s = static_cast<double>(m) * config.microbatch_size *
                          config.model.seq_len * config.dp / std::max(report.seconds, 1e-9);
    report.bubble_ratio_measured = outcome.bubble_ratio;
    report.bubble_ratio_predicted = predicted_bubbles;
    if (EvaluatesAfter(config, step)) {
      std::vector<TokenBatch> val;
      for (int i = 0; i < config.eval_batches; ++i) {
        val.push_back(corpus.SampleValidation(
            config.seed, static_cast<int64_t>(groups.dp_rank()) * config.eval_batches + i,
            config.microbatch_size));
      }
      PW_ASSIGN_OR_RETURN(report.val_loss, executor->Evaluate(val));
      report.has_val_loss = true;
    }
    if (!config.checkpoint_dir.empty() &&
        (step + 1 == config.steps ||
         (config.checkpoint_every > 0 && (step + 1) % config.checkpoint_every == 0))) {
      PW_RETURN_IF_ERROR(SaveCheckpoint(config, partition, ResolvedOptimizer(config), step + 1,
                                        world, groups, stages, *optimizer_state));
    }
    if (on_step) on_step(report);
  }
  MeasuredOutputs measured;
  measured.trace_path = config.trace_out;
  measured.profile_path = config.profile_out;
  measured.profile.output_bytes = 4.0 * config.microbatch_size * config.model.seq_len * config.model.d_model;
  measured.trace.title = "pipewright train " + compute_schedule.name;
  std::string report;
  std::vector<RankObserver::LaneEvent> lane_events;
  if (observer != nullptr) {
    report = observer->Finish();
    lane_events = observer->LaneEvents();
  }
  if (observer != nullptr && !config.trace_out.empty()) {
    // The trace with the observers' lanes: written here instead of by WriteMeasuredOutputs.
    PW_ASSIGN_OR_RETURN(auto spans, GatherTimelines(&groups.pipeline(), rank, executor->timeline()));
    Timeline lane;
    std::vector<std::string> names;
    const auto first_origin = step_origins.empty() ? Timeline::Clock::time_point{} : step_origins.begin()->second;
    for (const RankObserver::LaneEvent& e : lane_events) {
      // The step whose origin is the last one at or before the event.
      auto owner = step_origins.end();
      for (auto o = step_origins.begin(); o != step_origins.end() && o->second <= e.start; ++o) owner = o;
      if (owner == step_origins.end()) continue;
      auto name = std::find(names.begin(), names.end(), e.name);
      if (name == names.end()) name = names.insert(names.end(), e.name);
      TimelineSpan span;
      span.kind = ActionKind::kIdle;
      span.stage = static_cast<int>(name - names.begin());
      span.step = owner->first;
      span.step_origin_us = std::chrono::duration<double, std::micro>(owner->second - first_origin).count();
      span.start_us = std::chrono::duration<double, std::micro>(e.start - owner->second).count();
      span.dur_us = std::chrono::duration<double, std::micro>(e.end - e.start).count();
      lane.AddSpan(span);
    }
    std::string joined;
    for (const std::string& n : names) joined += n + "\n";
    PW_ASSIGN_OR_RETURN(auto lanes, GatherTimelines(&groups.pipeline(), rank, lane));
    PW_ASSIGN_OR_RETURN(auto lane_names, GatherStrings(groups.pipeline(), joined));
    if (world.rank == 0) {
      std::vector<std::vector<std::string>> split(lane_names.size());
      for (size_t r = 0; r < lane_names.size(); ++r) {
        size_t start = 0, end;
        while ((end = lane_names[r].find('\n', start)) != std::string::npos) {
          split[r].push_back(lane_names[r].substr(start, end - start));
          start = end + 1;
        }
      }
      const std::string trace = AddObserverLanes(
          RenderMeasuredTrace(executor->schedule(), spans, measured.trace), spans, lanes, split);
      std::ofstream out(config.trace_out, std::ios::binary | std::ios::trunc);
      out << trace;
      out.close();
      if (!out) return Status::IoError("cannot write --trace " + config.trace_out);
    }
    measured.trace_path.clear();
  }
  PW_RETURN_IF_ERROR(WriteMeasuredOutputs(*executor, &groups.pipeline(), world.rank == 0, measured));
  if (observer != nullptr) {
    PW_ASSIGN_OR_RETURN(auto reports, GatherStrings(groups.world(), report));
    if (observer_reports != nullptr && world.rank == 0) *observer_reports = std::move(reports);
  }
  if (final_params != nullptr) {
    final_params->clear();
    for (auto& s : stages) {
      for (auto& [name, t] : s->NamedParameters()) final_params->emplace_back(name, t.detach().clone());
    }
  }
  return Status::Ok();
}

Status RunReferenceTraining(const TrainConfig& config, const StepCallback& on_step,
                            NamedTensors* final_params) {
  PW_RETURN_IF_ERROR(CheckConfig(config));
  PW_ASSIGN_OR_RETURN(ByteCorpus corpus,
                      ByteCorpus::Load(config.data, config.model.seq_len, config.val_fraction));
  StageModule model(config.model, WholeModelSpan(config.model), config.seed);
  const OptimizerConfig optimizer_config = ResolvedOptimizer(config);
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

namespace pw {

Status RunWorker(const TrainConfig& config, const Schedule& compute_schedule, bool print_params,
                 const std::string& metrics_out) {
  PW_ASSIGN_OR_RETURN(WorldInfo world, WorldFromEnvironment(ProcessEnvironment()));
  NamedTensors params;
  const bool is_printer = world.rank == 0;
  std::FILE* metrics = nullptr;
  if (is_printer && !metrics_out.empty()) {
    metrics = std::fopen(metrics_out.c_str(), "w");
    if (metrics == nullptr) {
      return Status::IoError("cannot write --metrics-out " + metrics_out);
    }
  }
  struct Closer {
    std::FILE* f;
    ~Closer() {
      if (f != nullptr) std::fclose(f);
    }
  } closer{metrics};
  StepReport last;
  double busy_seconds = 0;
  ProgressPrinter progress(stdout, print_params ? ProgressMode::kPlain : config.progress);
  const auto train_start = std::chrono::steady_clock::now();
  int64_t first_step = -1;  // the run's first step (after a resume, not 0)
  int steps_run = 0;  // fewer than config.steps after --resume
  std::vector<double> step_seconds;
  std::vector<std::string> reports;  // the observers', on world rank 0
  Status status = RunPipelineRank(
      config, compute_schedule, world,
      [&](const StepReport& r) {
        if (!is_printer) return;
        last = r;
        busy_seconds += r.seconds;
        step_seconds.push_back(r.seconds);
        ++steps_run;
        if (metrics != nullptr) {
          std::fprintf(metrics,
                       "{\"step\": %lld, \"loss\": %.9g, \"lr\": %.9g, \"grad_norm\": %.9g, "
                       "\"tokens_per_s\": %.6g, \"bubble_ratio_measured\": %.4f, "
                       "\"bubble_ratio_predicted\": %.4f",
                       static_cast<long long>(r.step), r.loss, r.lr, r.grad_norm, r.tokens_per_s,
                       r.bubble_ratio_measured, r.bubble_ratio_predicted);
          if (r.has_val_loss) std::fprintf(metrics, ", \"val_loss\": %.9g", r.val_loss);
          std::fprintf(metrics, "}\n");
          std::fflush(metrics);
        }
        if (print_params) {  // full precision for tests
          std::printf("step %lld loss %.17g lr %.17g grad_norm %.17g time_s %.3f\n",
                      static_cast<long long>(r.step), r.loss, r.lr, r.grad_norm, r.seconds);
        } else if (progress.active()) {
          if (first_step < 0) first_step = r.step;
          progress.Update({r.step + 1, config.steps, r.loss, r.tokens_per_s, Seconds(train_start), first_step});
        } else {
          std::printf("step %4lld  loss %.4f  lr %.2e  grad_norm %.3f  %.0f ms\n",
                      static_cast<long long>(r.step), r.loss, r.lr, r.grad_norm, r.seconds * 1e3);
        }
        if (r.has_val_loss && progress.active()) {
          progress.Message("val step " + std::to_string(r.step) + " loss " + std::to_string(r.val_loss));
        } else if (r.has_val_loss) {
          std::printf(print_params ? "val step %lld loss %.17g\n" : "val step %lld loss %.4f\n",
                      static_cast<long long>(r.step), r.val_loss);
        }
        std::fflush(stdout);
      },
      print_params ? &params : nullptr, &reports);
  progress.Finish();
  PW_RETURN_IF_ERROR(status);
  if (is_printer && !print_params && steps_run > 0) {
    const double tokens = static_cast<double>(steps_run) * config.microbatches *
                          config.microbatch_size * config.model.seq_len * config.dp;
    std::printf("summary: %d steps  final loss %.4f", steps_run, last.loss);
    if (last.has_val_loss) std::printf("  val loss %.4f", last.val_loss);
    std::printf("  %.0f tokens/s  bubbles %.1f%% (predicted %.1f%%)\n",
                busy_seconds > 0 ? tokens / busy_seconds : 0.0, 100 * last.bubble_ratio_measured,
                100 * last.bubble_ratio_predicted);
  }
  if (is_printer && !reports.empty()) {
    if (config.observer.summarize) {
      const std::string text = config.observer.summarize(reports, step_seconds);
      std::printf("%s", text.c_str());
      if (!text.empty() && text.back() != '\n') std::printf("\n");
    }
    if (metrics != nullptr) {
      std::string line = "{\"observers\": [";
      for (size_t i = 0; i < reports.size(); ++i) {
        line += (i ? ", " : "") + (reports[i].empty() ? std::string("null") : reports[i]);
      }
      std::fprintf(metrics, "%s]}\n", line.c_str());
      std::fflush(metrics);
    }
  }
  for (const ParamSummary& p : SummarizeParams(params)) {
    std::printf("param %s %.17g %.17g %.17g\n", p.name.c_str(), p.sum, p.abs_sum, p.weighted_sum);
  }
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace pw
