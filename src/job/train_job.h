// TrainJob: every setting of a `pipewright train` job, declared once
// (core/fields.h). The flags, `--set train.KEY=VALUE`, a model file's
// [train] table, the JSON job file handed to worker ranks and the
// checkpoint manifest all read and write these fields through VisitFields.
//
// Precedence, lowest first: the defaults below, the [train] table of the
// model file (--config), the command-line flags, `--set train.KEY=VALUE`.
//
// Thread-safety: a plain value; the functions are pure except where they
// say they read files.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/fields.h"
#include "model/model_config.h"

namespace pw {

struct TrainJob {
  std::string config;             // model TOML; empty: the built-in tiny model
  std::string model_dir;          // a Hugging Face model directory (--model): its config and weights
  std::vector<std::string> set;   // --set section.key=value, in order
  int pp = 2;
  int dp = 1;
  std::string schedule = "1f1b";  // built-in family, schedule file, or auto
  std::string schedule_costs;     // cost-model JSON a .pipe schedule compiles with; empty: its `costs` line's, else the default
  int chunks = 0;
  int microbatches = 4;
  int microbatch_size = 2;
  int steps = 20;
  uint64_t seed = 1234;
  std::string data;
  double lr = 1e-3;
  double grad_clip = 1.0;
  std::string on_nonfinite = "stop";  // stop | skip
  double weight_decay = 0.1;
  int warmup = 2;
  int decay_steps = 0;            // cosine decay length; 0: --steps
  int eval_every = 0;
  int eval_batches = 4;
  std::string layers_per_stage;
  std::string metrics_out;
  std::string checkpoint_dir;
  int checkpoint_every = 0;
  std::string resume;
  std::string trace;
  std::string profile_out;
  std::string loss_curve;
  std::vector<std::string> side_task;
  std::vector<std::string> side_task_cmd;
  std::string harvest_policy;     // none | idle | gated; empty: gated with tasks
  double harvest_step_margin = 1.2;
  int harvest_paired = 0;         // > 0: in-run paired slowdown, blocks of this many steps
  int recompute_paired = 0;       // > 0: in-run paired cost of DROP/RECOMPUTE, blocks of this many steps
  int timeout = 0;
  int collective_timeout = 60;    // seconds; bound on every wait for a peer
  int max_restarts = 0;           // local launch: restarts from the last checkpoint
  bool pin_cpus = true;
  int receive_window = 4;
  // Plumbing from the launcher to its workers (hidden).
  bool progress = false;          // relay a progress line to the launcher
  // Set by ApplyPlan (job/train_plan.h) for the ranks and the manifest.
  std::string plan_why;           // how `auto` decided the schedule or split
  std::string request_json;       // the user's request (its fields as JSON) before planning

  // Resolved from `config` and `set` (ResolveTrainJob); not a flag.
  ModelConfig model;

  template <class V> void VisitFields(V& v) { Visit(*this, v); }
  template <class V> void VisitFields(V& v) const { Visit(*this, v); }

 private:
  template <class Self, class V>
  static void Visit(Self& j, V& v) {
    v(j.config, {"config", "Model TOML file; its [train] table sets defaults of these flags "
                           "(default: built-in tiny model)", 0, 0, kFieldPath | kFieldCliOnly});
    v(j.model_dir, {"model", "Hugging Face model directory (config.json, *.safetensors) to start from: "
                             "its architecture and weights (docs/models.md)", 0, 0, kFieldPath | kFieldCliOnly});
    v(j.set, {"set", "Override section.key=value: model.KEY (the [model] table) or train.KEY "
                     "(a flag by name); repeatable", 0, 0, kFieldCliOnly});
    // Local ranks are processes on this machine: a few thousand is already absurd.
    v(j.pp, {"pp", "Pipeline ranks", 1, 4096});
    v(j.dp, {"dp", "Data-parallel replicas", 1, 4096});
    v(j.schedule, {"schedule", "Built-in family, schedule file (.pipe, .csv, text), or auto: the family "
                               "with the shortest simulated step under costs measured on this machine at launch"});
    v(j.schedule_costs, {"schedule_costs", "Cost-model JSON a .pipe schedule is compiled with (a .pipe's order, "
                                           "and whether a byte memory cap admits it, depend on the costs); "
                                           "default: the file its `costs` line names (plan -o writes it), else "
                                           "uniform F=1, B=2"});
    v(j.chunks, {"chunks", "Stages per rank (0: the family's default)", 0, 64});
    v(j.microbatches, {"microbatches", "Microbatches per step and replica", 1, 1 << 20});
    v(j.microbatch_size, {"microbatch_size", "Sequences per microbatch", 1, 1 << 20});
    v(j.steps, {"steps", "Training steps", 1});
    v(j.seed, {"seed", "Seed of the model init and data order"});
    v(j.data, {"data", "Text file or directory (default: /usr/share/common-licenses)", 0, 0, kFieldPath});
    v(j.lr, {"lr", "Peak learning rate", 0});
    v(j.grad_clip, {"grad_clip", "Max global gradient norm (0: off)", 0});
    v(j.on_nonfinite, {.name = "on_nonfinite",
                       .help = "A step whose loss or gradient norm is NaN or infinite: stop (fail naming step and "
                               "stages) or skip (leave the weights as they were, report it, go on)",
                       .choices = "stop skip"});
    v(j.weight_decay, {"weight_decay", "AdamW weight decay", 0});
    v(j.warmup, {"warmup", "Warm-up steps", 0});
    v(j.decay_steps, {"decay_steps", "Cosine decay ends after this many steps (0: --steps)", 0});
    v(j.eval_every, {"eval_every", "Validation every N steps (0: after the last step only)", 0});
    v(j.eval_batches, {"eval_batches", "Validation microbatches per replica (0: no validation)", 0});
    v(j.layers_per_stage, {"layers_per_stage", "Blocks per virtual stage, e.g. 1,2,1 (default: balanced by cost; "
                                              "auto: the split with the shortest simulated step under costs "
                                              "measured on this machine)"});
    v(j.metrics_out, {"metrics_out", "Write one JSON line per step (loss, tokens_per_s, bubble ratios, peak memory per rank) to FILE",
                      0, 0, kFieldPath});
    v(j.checkpoint_dir, {"checkpoint_dir", "Write checkpoints (safetensors per stage + manifest.json) to DIR",
                         0, 0, kFieldPath});
    v(j.checkpoint_every, {"checkpoint_every", "Checkpoint every N steps as well as after the last "
                                               "(0: only the last)", 0});
    v(j.resume, {"resume", "Continue from the checkpoint in DIR up to --steps (same config and flags); "
                           "auto: from --checkpoint-dir when it holds a checkpoint, else from step 0 "
                           "(for reruns by torchrun --max-restarts, Slurm --requeue)",
                 0, 0, kFieldPath | kFieldAuto});
    v(j.trace, {"trace", "Write the measured per-rank timeline (Chrome/Perfetto JSON) to FILE", 0, 0, kFieldPath});
    v(j.profile_out, {"profile_out", "Write measured per-(stage, kind) costs in ms (cost-model JSON for "
                                     "--cost-file) to FILE", 0, 0, kFieldPath});
    v(j.loss_curve, {"loss_curve", "Write an SVG of train and validation loss per step to FILE", 0, 0, kFieldPath});
    v(j.side_task, {"side_task", "Run a built-in side task in the bubbles: cnn, pagerank, image, infer, with options "
                                 "NAME:key=value, placement @rank=N, memory limit @mem=SIZE, its step time "
                                 "@step=MS (placed where its steps fit) (repeatable)"});
    v(j.side_task_cmd, {"side_task_cmd", "Run a command line in the bubbles (SIGSTOP/SIGCONT); end it with "
                                         "@rank=N to pin it, @mem=SIZE to limit its memory, @step=MS to place "
                                         "it where its steps fit (repeatable)"});
    v(j.harvest_policy, {"harvest_policy", "none | idle (idle priority only) | gated (paused outside bubbles; "
                                           "default with side tasks)"});
    v(j.harvest_step_margin, {"harvest_step_margin", "Gated: a side-task step starts only if the bubble's "
                                                     "predicted remaining time exceeds this x the task's measured "
                                                     "step time (0: start steps until paused)", 0});
    v(j.harvest_paired, {"harvest_paired", "Measure the slowdown inside the run: side tasks allowed and held in "
                                           "alternating blocks of K steps (order per pair seeded by --seed), "
                                           "reported as the paired difference with a 95% interval (0: off)",
                         0, 100000});
    v(j.recompute_paired, {"recompute_paired", "Measure what the schedule's recomputation costs inside the run: "
                                               "its DROP and RECOMPUTE actions run and skipped (activations "
                                               "kept from F to the backward) in alternating blocks of K steps "
                                               "(order per pair seeded by --seed), reported as the paired step "
                                               "time difference with a 95% interval and each phase's peak "
                                               "memory (0: off)",
                           0, 100000});
    v(j.timeout, {"timeout", "Stop the job after this many seconds (0: none)", 0});
    v(j.collective_timeout, {"collective_timeout", "Seconds a rank waits for a peer (send, receive, all-reduce) "
                                                   "before the job fails naming the hung rank; must cover the "
                                                   "longest compute between matching operations (a stage's "
                                                   "forward and backward of a microbatch, the optimizer step, "
                                                   "a checkpoint write)", 1, 86400});
    v(j.max_restarts, {"max_restarts", "When a local rank fails, restart all ranks from the last checkpoint in "
                                       "--checkpoint-dir (from the start without one), up to N times, like "
                                       "torchrun --max-restarts", 0, 1000});
    v(j.receive_window, {"receive_window", "Receives each rank posts ahead of its program (boundary buffers "
                                           "held: this many activations or gradients)", 1, 1024});
    v(j.pin_cpus, {"pin_cpus", "Pin each local rank's compute thread to a CPU of its own when there are at "
                               "least as many CPUs as local ranks (--pin-cpus=false: leave it to the OS)"});
    v(j.progress, {"progress", "Relay a progress line (used by the launcher)", 0, 0, kFieldHidden});
    v(j.plan_why, {"plan_why", "How schedule or layers auto decided (set by the launcher)", 0, 0, kFieldHidden});
    v(j.request_json, {"request_json", "The job as asked for, before planning (set by the launcher)", 0, 0,
                       kFieldHidden});
  }
};

// Fills job.model from job.config (or the built-in defaults), applies the
// config file's [train] table to every field for which `given_on_command_line`
// is false, then the `set` entries in order (train.KEY through the fields,
// model.KEY through ApplyOverride), and checks every field's range. Reads the
// config file. Errors name the file and key, or the --set entry.
Status ResolveTrainJob(TrainJob& job, const std::function<bool(std::string_view)>& given_on_command_line);

// Whether the job asks for the harvest layer: a side task, a harvest policy
// or in-run paired measurement. Pure.
bool WantsHarvest(const TrainJob& job);

// InvalidArgument when --resume auto comes without --checkpoint-dir (the
// directory it resumes from); OK otherwise. Pure.
Status CheckResumeAuto(const TrainJob& job);

// The job as the JSON text of a job file: {"train": {fields}, "model": TOML
// text of job.model}. Relative paths are made absolute (workers may start
// in another directory). Pure except for the current directory.
std::string TrainJobToJson(const TrainJob& job);

// Reads a job file written by TrainJobToJson (`source` names it in errors).
Result<TrainJob> TrainJobFromJson(const std::string& text, const std::string& source);

// The [train] table of the TOML text applied to `job` except the keys for
// which `skip` is true; an absent table is fine. Errors name source:line.
Status ApplyTrainTable(TrainJob& job, std::string_view toml_text, std::string_view source,
                       const std::function<bool(std::string_view)>& skip);

}  // namespace pw
