// `pipewright train`: trains the GPT-style model with a pipeline schedule on
// local ranks. The command validates its inputs, then re-executes this binary
// once per rank (LaunchLocalRanks, one thread per rank) with a hidden
// `--worker` flag; each worker reads its rank from the environment and runs
// one rank of the job (runtime/trainer.h). Started by torchrun / mpirun /
// Slurm (RANK etc. set), the command is a worker at once. Rank 0 prints one
// line per step; output arrives rank-prefixed. A failing rank stops the job
// and the command exits 1 with the launcher's message.
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/schedule_options.h"
#include "comm/launcher.h"
#include "comm/world_info.h"
#include "core/file_io.h"
#include "core/text.h"
#include "model/model_config.h"
#include "model/partitioner.h"
#include "search/auto_schedule.h"
#include "runtime/data.h"
#include "runtime/trainer.h"
#include "schedule/generators.h"
#include "viz/file_output.h"
#include "viz/line_chart.h"
#ifdef PW_HAVE_HARVEST
#include "harvest/manager.h"
#include "harvest/side_task.h"
#endif

namespace pw::cli {
namespace {

struct TrainCliOptions {
  std::string config;  // empty: the built-in defaults (examples/tiny.toml)
  int pp = 2;
  int dp = 1;
  std::string schedule = "1f1b";
  int chunks = 0;
  int microbatches = 4;
  int microbatch_size = 2;
  int steps = 20;
  uint64_t seed = 1234;
  std::string data;
  std::vector<std::string> sets;
  double lr = 3e-3;
  double grad_clip = 1.0;
  double weight_decay = 0.1;
  int warmup = 2;
  int timeout_s = 0;
  int eval_every = 0;
  int eval_batches = 4;
  std::string layers_per_stage;
  std::string metrics_out;
  std::string checkpoint_dir;
  int checkpoint_every = 0;
  std::string resume;
  std::string trace_out;
  std::string profile_out;
  std::string loss_curve;   // SVG of train/val loss, drawn from the metrics after the run
  std::string schedule_note;  // why --schedule auto chose what it chose
  bool progress = false;  // hidden: relay progress lines to the launcher
  bool worker = false;
  std::vector<std::string> side_tasks;      // --side-task SPEC (repeatable)
  std::vector<std::string> side_task_cmds;  // --side-task-cmd "CMD[@rank=N]" (repeatable)
  std::string harvest_policy;               // none | idle | gated; "": gated with tasks
  double harvest_step_margin = 1.2;         // gated: a step starts if remaining > margin x step time
  CLI::Option* pp_opt = nullptr;
  CLI::Option* microbatches_opt = nullptr;
};

bool IsBuiltinFamily(const std::string& name) {
  GeneratorOptions g;
  return GenerateSchedule(name, g).status().code() != StatusCode::kNotFound;
}

// `--set train.KEY=VALUE`: the same settings as the flags, by name.
Status ApplyTrainSet(TrainCliOptions& o, std::string_view key, const std::string& value) {
  struct Field {
    const char* name;
    std::variant<int*, double*, std::string*, uint64_t*> target;
  };
  const Field fields[] = {
      {"pp", &o.pp}, {"dp", &o.dp}, {"schedule", &o.schedule}, {"chunks", &o.chunks},
      {"microbatches", &o.microbatches}, {"microbatch_size", &o.microbatch_size}, {"steps", &o.steps},
      {"seed", &o.seed}, {"data", &o.data}, {"lr", &o.lr}, {"grad_clip", &o.grad_clip},
      {"weight_decay", &o.weight_decay}, {"warmup", &o.warmup}, {"eval_every", &o.eval_every},
      {"eval_batches", &o.eval_batches}, {"layers_per_stage", &o.layers_per_stage}};
  std::string names, closest;
  size_t best = 3;  // suggest only close misspellings
  for (const Field& f : fields) {
    names += (names.empty() ? "" : ", ") + std::string(f.name);
    if (EditDistance(key, f.name) < best) best = EditDistance(key, f.name), closest = f.name;
    if (key != f.name) continue;
    bool ok = true;
    std::visit(
        [&](auto* field) {
          using T = std::remove_pointer_t<decltype(field)>;
          if constexpr (std::is_same_v<T, std::string>) {
            *field = value;
          } else {
            T v{};
            auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
            ok = ec == std::errc() && ptr == value.data() + value.size();
            if (ok) *field = v;
          }
        },
        f.target);
    if (!ok) return Status::InvalidArgument("--set train." + std::string(key) + "=" + value + ": not a number");
    return Status::Ok();
  }
  return Status::InvalidArgument("--set train." + std::string(key) + ": unknown key" +
                                 (closest.empty() ? "" : " (did you mean '" + closest + "'?)") +
                                 "; valid train keys: " + names);
}

// Bubble harvesting: --side-task / --side-task-cmd / --harvest-policy into
// the config's rank observer (harvest/manager.h). A --side-task-cmd value
// may end in "@rank=N" (pinned to world rank N); the rest is the command
// line, run with sh -c.
Status ResolveHarvest(const TrainCliOptions& o, TrainConfig& config) {
  if (o.side_tasks.empty() && o.side_task_cmds.empty() && o.harvest_policy.empty()) return Status::Ok();
#ifdef PW_HAVE_HARVEST
  HarvestOptions options;
  options.policy = HarvestPolicy::kGated;
  if (!o.harvest_policy.empty()) {
    PW_ASSIGN_OR_RETURN(options.policy, ParseHarvestPolicy(o.harvest_policy));
  }
  if (!(o.harvest_step_margin >= 0)) {
    return Status::InvalidArgument("--harvest-step-margin must be >= 0 (1.2: a step starts only when the "
                                   "bubble's remaining time exceeds 1.2 x the task's step time)");
  }
  options.step_margin = o.harvest_step_margin;
  for (const std::string& text : o.side_tasks) {
    PW_ASSIGN_OR_RETURN(SideTaskSpec spec, ParseSideTaskSpec(text));
    options.tasks.push_back(spec);
  }
  for (const std::string& text : o.side_task_cmds) {
    SideTaskSpec spec;
    spec.name = "cmd";
    spec.command = text;
    const size_t at = text.rfind("@rank=");
    if (at != std::string::npos) {
      const std::string digits = text.substr(at + 6);
      int rank = -1;
      auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
      if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() || rank < 0) {
        return Status::InvalidArgument("--side-task-cmd '" + text + "': '@rank=" + digits +
                                       "' is not a rank; end the command with @rank=N (N >= 0) "
                                       "to pin it, or leave @rank= out");
      }
      spec.pinned_rank = rank;
      spec.command = text.substr(0, at);
    }
    if (spec.command.find_first_not_of(" \t") == std::string::npos) {
      return Status::InvalidArgument("--side-task-cmd '" + text + "': empty command");
    }
    options.tasks.push_back(spec);
  }
  for (const SideTaskSpec& spec : options.tasks) {
    if (spec.pinned_rank >= o.pp * o.dp) {
      return Status::InvalidArgument("side task '" + spec.name + "' is pinned to rank " +
                                     std::to_string(spec.pinned_rank) + " but the job has ranks 0.." +
                                     std::to_string(o.pp * o.dp - 1) + "; change @rank=");
    }
  }
  config.observer.make = [options](const RankContext& context) -> Result<std::unique_ptr<RankObserver>> {
    PW_ASSIGN_OR_RETURN(std::unique_ptr<HarvestManager> manager, HarvestManager::Create(context, options));
    return std::unique_ptr<RankObserver>(std::move(manager));
  };
  const int profile_steps = config.observer.profile_steps;
  config.observer.summarize = [profile_steps](const std::vector<std::string>& reports,
                                              const std::vector<double>& step_seconds) {
    return FormatHarvestSummary(reports, step_seconds, profile_steps);
  };
  return Status::Ok();
#else
  (void)config;
  return Status::FailedPrecondition("--side-task needs the harvest layer, which this build lacks "
                                    "(rebuild with src/harvest and OpenCV)");
#endif
}

// Builds the TrainConfig and the compute schedule from the options.
Status Resolve(TrainCliOptions& o, TrainConfig& config, Schedule& schedule) {
  if (!o.config.empty()) {
    PW_ASSIGN_OR_RETURN(config.model, LoadModelConfig(o.config));
  }
  std::vector<std::string> model_sets;
  for (const std::string& s : o.sets) {
    const size_t eq = s.find('=');
    if (s.rfind("train.", 0) == 0 && eq != std::string::npos) {
      PW_RETURN_IF_ERROR(ApplyTrainSet(o, std::string_view(s).substr(6, eq - 6), s.substr(eq + 1)));
      continue;
    }
    if (s.rfind("model.", 0) != 0) {
      return Status::InvalidArgument("--set " + s + ": unknown section; use model.<key>=<value> (keys of the "
                                     "[model] table) or train.<key>=<value> (the training flags by name)");
    }
    model_sets.push_back(s);
  }
  Status applied = ApplyOverrides(config.model, model_sets);
  if (!applied.ok()) return applied;
  config.pp = o.pp;
  config.dp = o.dp;
  config.schedule = o.schedule;
  config.chunks = o.chunks;
  config.microbatches = o.microbatches;
  config.microbatch_size = o.microbatch_size;
  config.steps = o.steps;
  config.seed = o.seed;
  config.data = o.data;
  config.optimizer.lr = o.lr;
  config.optimizer.min_lr = o.lr / 10;
  config.optimizer.grad_clip = o.grad_clip;
  config.optimizer.weight_decay = o.weight_decay;
  config.optimizer.warmup_steps = o.warmup;
  config.eval_every = o.eval_every;
  config.eval_batches = o.eval_batches;
  config.layers_per_stage = o.layers_per_stage;
  config.checkpoint_dir = o.checkpoint_dir;
  config.checkpoint_every = o.checkpoint_every;
  config.resume_dir = o.resume;
  config.trace_out = o.trace_out;
  config.profile_out = o.profile_out;
  config.progress = o.progress ? ProgressMode::kRelay
                               : (IsTerminal(stdout) ? ProgressMode::kInPlace : ProgressMode::kPlain);
  PW_RETURN_IF_ERROR(ResolveHarvest(o, config));
  if (o.schedule == "auto") {
    // Chosen once here; the workers get the concrete family.
    PW_ASSIGN_OR_RETURN(ScheduleChoice choice,
                        ChooseScheduleBySimulation(config.model, o.pp, o.microbatches, o.layers_per_stage));
    o.schedule = choice.family;
    o.chunks = 0;
    o.schedule_note = "schedule auto: " + choice.Describe();
  }
  ScheduleOptions so;
  so.schedule = o.schedule;
  so.ranks = o.pp;
  so.microbatches = o.microbatches;
  so.chunks = o.chunks;
  so.ranks_opt = IsBuiltinFamily(o.schedule) ? nullptr : o.pp_opt;
  so.microbatches_opt = IsBuiltinFamily(o.schedule) ? nullptr : o.microbatches_opt;
  PW_ASSIGN_OR_RETURN(schedule, LoadSchedule(so));
  config.pp = schedule.num_ranks();            // a schedule file sets the shape
  config.microbatches = schedule.num_microbatches;
  return Status::Ok();
}

// Draws train and validation loss against step from a --metrics-out file.
Status WriteLossCurve(const std::string& metrics_path, const std::string& svg_path, const std::string& schedule) {
  PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile(metrics_path));
  ChartSeries train{"train loss", "#0072B2", {}, {}};
  ChartSeries val{"validation loss", "#D55E00", {}, {}};
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    nlohmann::json j = nlohmann::json::parse(text.substr(start, end - start), nullptr, false);
    start = end + 1;
    if (!j.is_object() || !j.contains("step") || !j.contains("loss")) continue;
    const double step = j["step"].get<double>();
    train.x.push_back(step);
    train.y.push_back(j["loss"].get<double>());
    if (j.contains("val_loss")) {
      val.x.push_back(step);
      val.y.push_back(j["val_loss"].get<double>());
    }
  }
  return WriteFileAtomically(svg_path, RenderLineChartSvg("pipewright train (" + schedule + "): loss", "step",
                                                          {train, val}));
}

std::vector<std::string> WorkerArgv(const TrainCliOptions& o) {
  std::error_code ec;
  std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  std::vector<std::string> argv = {self, "train", "--worker",
                                   "--pp", std::to_string(o.pp),
                                   "--dp", std::to_string(o.dp),
                                   "--schedule", o.schedule,
                                   "--chunks", std::to_string(o.chunks),
                                   "--microbatches", std::to_string(o.microbatches),
                                   "--microbatch-size", std::to_string(o.microbatch_size),
                                   "--steps", std::to_string(o.steps),
                                   "--seed", std::to_string(o.seed),
                                   "--lr", ExactDouble(o.lr),
                                   "--grad-clip", ExactDouble(o.grad_clip),
                                   "--weight-decay", ExactDouble(o.weight_decay),
                                   "--warmup", std::to_string(o.warmup),
                                   "--eval-every", std::to_string(o.eval_every),
                                   "--eval-batches", std::to_string(o.eval_batches)};
  if (!o.config.empty()) argv.insert(argv.end(), {"--config", o.config});
  if (!o.data.empty()) argv.insert(argv.end(), {"--data", o.data});
  if (!o.metrics_out.empty()) {
    std::error_code abs_ec;
    argv.insert(argv.end(),
                {"--metrics-out", std::filesystem::absolute(o.metrics_out, abs_ec).string()});
  }
  if (!o.layers_per_stage.empty()) {
    argv.insert(argv.end(), {"--layers-per-stage", o.layers_per_stage});
  }
  std::error_code dir_ec;  // absolute: workers may start elsewhere
  if (!o.checkpoint_dir.empty()) {
    argv.insert(argv.end(),
                {"--checkpoint-dir", std::filesystem::absolute(o.checkpoint_dir, dir_ec).string(),
                 "--checkpoint-every", std::to_string(o.checkpoint_every)});
  }
  if (!o.resume.empty()) {
    argv.insert(argv.end(), {"--resume", std::filesystem::absolute(o.resume, dir_ec).string()});
  }
  if (!o.trace_out.empty()) {
    argv.insert(argv.end(), {"--trace", std::filesystem::absolute(o.trace_out, dir_ec).string()});
  }
  if (!o.profile_out.empty()) {
    argv.insert(argv.end(), {"--profile-out", std::filesystem::absolute(o.profile_out, dir_ec).string()});
  }
  if (IsTerminal(stdout)) argv.push_back("--progress");
  for (const std::string& s : o.sets) argv.insert(argv.end(), {"--set", s});
  for (const std::string& t : o.side_tasks) argv.insert(argv.end(), {"--side-task", t});
  for (const std::string& t : o.side_task_cmds) argv.insert(argv.end(), {"--side-task-cmd", t});
  if (!o.harvest_policy.empty()) argv.insert(argv.end(), {"--harvest-policy", o.harvest_policy});
  if (!o.side_tasks.empty() || !o.side_task_cmds.empty()) {
    argv.insert(argv.end(), {"--harvest-step-margin", ExactDouble(o.harvest_step_margin)});
  }
  return argv;
}

Status RunTrain(TrainCliOptions& o) {
  TrainConfig config;
  Schedule schedule;
  PW_RETURN_IF_ERROR(Resolve(o, config, schedule));
  const bool from_launcher = WorldFromEnvironment(ProcessEnvironment()).ok();
  if (o.worker || from_launcher) {
    return RunWorker(config, schedule, /*print_params=*/false, o.metrics_out);
  }

  // Fail here, once, rather than in every rank.
  PW_RETURN_IF_ERROR(
      ByteCorpus::Load(config.data, config.model.seq_len, config.val_fraction).status());
  PW_RETURN_IF_ERROR(
      PartitionModel(config.model, schedule.num_stages(), config.layers_per_stage).status());

  std::printf("pipewright train: %s on pp=%d x dp=%d local ranks, %d microbatches of %d, "
              "%d steps, %lld parameters\n",
              schedule.name.c_str(), config.pp, config.dp, config.microbatches,
              config.microbatch_size, config.steps,
              static_cast<long long>(CountParameters(config.model)));
  if (!o.schedule_note.empty()) std::printf("%s\n", o.schedule_note.c_str());
  std::fflush(stdout);
  // The loss curve is drawn from rank 0's metrics lines, so it needs a file.
  const std::string tmp_metrics = std::filesystem::temp_directory_path() /
                                  ("pipewright-metrics-" + std::to_string(getpid()) + ".jsonl");
  if (!o.loss_curve.empty() && o.metrics_out.empty()) o.metrics_out = tmp_metrics;
  LaunchOptions options;
  options.threads_per_rank = 1;
  ProgressPrinter progress(stdout, IsTerminal(stdout) ? ProgressMode::kInPlace : ProgressMode::kPlain);
  if (progress.active()) {
    options.sink = [&progress](int, OutputStream stream, const std::string& line) {
      progress.RelayLine(line, stream == OutputStream::kStdout ? stdout : stderr);
    };
  }
  if (o.timeout_s > 0) options.timeout = std::chrono::seconds(o.timeout_s);
  Status status = LaunchLocalRanks(WorkerArgv(o), config.pp * config.dp, options);
  progress.Finish();
  if (!status.ok()) return status.WithContext("training failed");
  if (!o.loss_curve.empty()) {
    Status drawn = WriteLossCurve(o.metrics_out, o.loss_curve, schedule.name);
    std::error_code rm_ec;
    if (o.metrics_out == tmp_metrics) std::filesystem::remove(tmp_metrics, rm_ec);
    PW_RETURN_IF_ERROR(drawn);
    std::printf("wrote %s (loss curve)\n", o.loss_curve.c_str());
  }
  return Status::Ok();
}

}  // namespace

void AddTrainCommand(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<TrainCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Train the GPT-style model on local ranks with a pipeline schedule");
  cmd->add_option("--config", o->config, "Model TOML file (default: built-in tiny model)");
  // Local ranks are processes on this machine: a few thousand is already absurd.
  o->pp_opt = cmd->add_option("--pp", o->pp, "Pipeline ranks")->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("--dp", o->dp, "Data-parallel replicas")->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("--loss-curve", o->loss_curve, "Write an SVG of train and validation loss per step to FILE");
  cmd->add_option("--schedule", o->schedule,
                  "Built-in family, schedule file (.pipe, .csv, text), or auto: the family with the shortest "
                  "simulated step for this model and shape")
      ->capture_default_str();
  cmd->add_option("--chunks", o->chunks, "Stages per rank (0: the family's default)")->check(CLI::Range(0, 64));
  o->microbatches_opt = cmd->add_option("--microbatches", o->microbatches,
                                        "Microbatches per step and replica")
                            ->capture_default_str()
                            ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--microbatch-size", o->microbatch_size, "Sequences per microbatch")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--steps", o->steps, "Training steps")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--seed", o->seed, "Seed of the model init and data order")->capture_default_str();
  cmd->add_option("--data", o->data, "Text file or directory (default: /usr/share/common-licenses)");
  cmd->add_option("--set", o->sets, "Config override section.key=value (repeatable)");
  cmd->add_option("--lr", o->lr, "Peak learning rate")->capture_default_str();
  cmd->add_option("--grad-clip", o->grad_clip, "Max global gradient norm (0: off)")
      ->capture_default_str();
  cmd->add_option("--weight-decay", o->weight_decay, "AdamW weight decay")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Warm-up steps")->capture_default_str();
  cmd->add_option("--eval-every", o->eval_every,
                  "Validation every N steps (0: after the last step only)")
      ->capture_default_str();
  cmd->add_option("--eval-batches", o->eval_batches,
                  "Validation microbatches per replica (0: no validation)")
      ->capture_default_str();
  cmd->add_option("--layers-per-stage", o->layers_per_stage,
                  "Blocks per virtual stage, e.g. 1,2,1 (default: balanced by cost)");
  cmd->add_option("--metrics-out", o->metrics_out,
                  "Write one JSON line per step (loss, tokens_per_s, bubble ratios) to FILE");
  cmd->add_option("--checkpoint-dir", o->checkpoint_dir,
                  "Write checkpoints (safetensors per stage + manifest.json) to DIR");
  cmd->add_option("--checkpoint-every", o->checkpoint_every,
                  "Checkpoint every N steps as well as after the last (0: only the last)")
      ->capture_default_str();
  cmd->add_option("--resume", o->resume,
                  "Continue from the checkpoint in DIR up to --steps (same config and flags)");
  cmd->add_option("--trace", o->trace_out,
                  "Write the measured per-rank timeline (Chrome/Perfetto JSON) to FILE");
  cmd->add_option("--profile-out", o->profile_out,
                  "Write measured per-(stage, kind) costs in ms (cost-model JSON for --cost-file) to FILE");
  cmd->add_option("--side-task", o->side_tasks,
                  "Run a built-in side task in the bubbles: cnn, pagerank, image, with options "
                  "NAME:key=value and placement @rank=N (repeatable)");
  cmd->add_option("--side-task-cmd", o->side_task_cmds,
                  "Run a command line in the bubbles (SIGSTOP/SIGCONT); end it with @rank=N to pin it "
                  "(repeatable)");
  cmd->add_option("--harvest-policy", o->harvest_policy,
                  "none | idle (idle priority only) | gated (paused outside bubbles; default with side tasks)");
  cmd->add_option("--harvest-step-margin", o->harvest_step_margin,
                  "Gated: a side-task step starts only if the bubble's predicted remaining time exceeds "
                  "this x the task's measured step time (0: start steps until paused)")
      ->capture_default_str();
  cmd->add_flag("--progress", o->progress, "Relay a progress line (used by the launcher)")->group("");
  cmd->add_option("--timeout", o->timeout_s, "Stop the job after this many seconds (0: none)");
  cmd->add_flag("--worker", o->worker, "Run one rank (used by the launcher)")->group("");
  cmd->callback([o, &ctx] { ctx.run = [o] { return RunTrain(*o); }; });
}

}  // namespace pw::cli
