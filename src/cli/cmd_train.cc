// `pipewright train`: the flags are the fields of a TrainJob (job/train_job.h).
// The command resolves the job (model file, its [train] table, --set),
// checks it once, writes it to a job file and re-executes this binary once
// per rank (LaunchLocalRanks, one thread per rank) with `--worker --job
// FILE`; each worker runs one rank (runtime/train_worker.h). Started by
// torchrun / mpirun / Slurm (RANK etc. set), the command is a worker at
// once. A failing rank stops the job and the command exits 1 with the
// launcher's message; with --max-restarts N the launcher first restarts all
// ranks from the last checkpoint, up to N times (docs/reliability.md).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/job_flags.h"
#include "cli/launch_job.h"
#include "comm/world_info.h"
#include "core/file_io.h"
#include "job/train_job.h"
#include "model/checkpoint.h"
#include "model/gpt.h"
#include "model/partitioner.h"
#include "runtime/data.h"
#include "runtime/train_worker.h"
#include "runtime/trainer.h"
#ifdef PW_HAVE_HARVEST
#include "harvest/job_observer.h"
#endif

namespace pw::cli {
namespace {

struct TrainCommand {
  TrainJob job;
  std::string job_file;  // hidden: the launcher's job file (worker ranks)
  bool worker = false;   // hidden: run one rank
  std::function<bool(std::string_view)> given;  // flag given on the command line
};

Result<TrainObserverHooks> ObserverFor(const TrainJob& job) {
#ifdef PW_HAVE_HARVEST
  return HarvestHooksFor(job);
#else
  if (!WantsHarvest(job)) return TrainObserverHooks{};
  return Status::FailedPrecondition("--side-task needs the harvest layer, which this build lacks "
                                    "(rebuild with src/harvest and OpenCV)");
#endif
}

// Where a restart (--max-restarts) resumes: the checkpoint in
// --checkpoint-dir when it has one, else where the first attempt started
// (--resume, or step 0; with --resume auto, the ranks decide alike).
std::string RestartPoint(const TrainJob& job) {
  if (!job.checkpoint_dir.empty() && ReadCheckpointManifest(job.checkpoint_dir).ok()) return job.checkpoint_dir;
  return job.resume;
}

std::string DescribeRestartPoint(const TrainJob& job, const std::string& resume) {
  if (resume == "auto") return "--resume auto (the checkpoint in " + job.checkpoint_dir + " if there is one)";
  if (resume.empty()) {
    return job.checkpoint_dir.empty() ? "step 0 (no --checkpoint-dir)"
                                      : "step 0 (no checkpoint in " + job.checkpoint_dir + " yet)";
  }
  Result<CheckpointManifest> manifest = ReadCheckpointManifest(resume);
  const std::string step = manifest.ok() ? "step " + std::to_string(manifest->step) + " " : "";
  return "the checkpoint at " + step + "in " + resume;
}

Status Launch(const TrainJob& job, const Schedule& schedule) {
  // Fail here, once, rather than in every rank.
  PW_ASSIGN_OR_RETURN(TrainCorpus corpus, TrainCorpus::Load(job.data, job.model.seq_len, kDefaultValidationFraction));
  PW_RETURN_IF_ERROR(corpus.CheckVocabulary(job.model.vocab_size, job.data));
  // Shards only: text is bytes, which CheckVocabulary has allowed.
  if (const int64_t max_token = corpus.sharded() ? corpus.MaxToken() : 0; max_token >= job.model.vocab_size) {
    return Status::InvalidArgument("data " + (job.data.empty() ? std::string(kDefaultCorpusDir) : job.data) +
                                   " holds token id " + std::to_string(max_token) + " but the model's vocabulary has " +
                                   std::to_string(job.model.vocab_size) + " ids; tokenize the text with the model's "
                                   "own tokenizer (pipewright tokenize --model DIR)");
  }
  PW_RETURN_IF_ERROR(PartitionModel(job.model, schedule.num_stages(), job.layers_per_stage).status());
  std::printf("pipewright train: %s on pp=%d x dp=%d local ranks, %d microbatches of %d, %d steps, "
              "%lld parameters\n",
              schedule.name.c_str(), job.pp, job.dp, job.microbatches, job.microbatch_size, job.steps,
              static_cast<long long>(CountParameters(job.model)));
  if (!job.layers_per_stage.empty()) std::printf("blocks per stage: %s\n", job.layers_per_stage.c_str());
  if (!job.schedule_costs.empty()) std::printf("order compiled with the costs in %s\n", job.schedule_costs.c_str());
  if (!job.plan_why.empty()) std::printf("%s\n", job.plan_why.c_str());
  std::fflush(stdout);

  TrainJob attempt = job;
  for (int restart = 0;; ++restart) {
    Status status = LaunchJobRanks(
        "train",
        [&attempt](bool relay_progress) {
          TrainJob for_workers = attempt;
          for_workers.progress = relay_progress;
          return TrainJobToJson(for_workers);
        },
        job.pp * job.dp, job.timeout, job.collective_timeout, {{"PIPEWRIGHT_RESTART_COUNT", std::to_string(restart)}});
    if (status.ok()) return status;
    if (restart >= job.max_restarts) {
      return status.WithContext(restart == 0 ? "training failed"
                                             : "training failed after " + std::to_string(restart) + " restart(s)");
    }
    std::fprintf(stderr, "pipewright train: the job failed: %s\n", status.message().c_str());
    attempt.resume = RestartPoint(job);
    std::fprintf(stderr, "pipewright train: restart %d of %d (--max-restarts): all %d ranks from %s\n",
                 restart + 1, job.max_restarts, job.pp * job.dp, DescribeRestartPoint(job, attempt.resume).c_str());
    std::fflush(stderr);
  }
}

Status RunTrain(const TrainCommand& c) {
  TrainJob job = c.job;
  if (!c.job_file.empty()) {
    PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile(c.job_file));
    PW_ASSIGN_OR_RETURN(job, TrainJobFromJson(text, c.job_file));
  } else {
    PW_RETURN_IF_ERROR(ResolveTrainJob(job, c.given));
  }
  // A job file holds the shape the launcher resolved (flags over the
  // schedule file's own `ranks` and `microbatches`): the worker keeps it.
  const bool from_flags = c.job_file.empty();
  // Only the launcher measures for `auto`: ranks started by torchrun etc.
  // would each measure (and might choose) differently.
  const bool is_rank = c.worker || WorldFromEnvironment(ProcessEnvironment()).ok();
  PW_ASSIGN_OR_RETURN(TrainPlan plan, PlanTraining(job, !from_flags || c.given("pp"),
                                                   !from_flags || c.given("microbatches"), !is_rank));
  // The request stays as asked; the ranks run it with the plan applied.
  const TrainJob planned = ApplyPlan(job, plan.resolved);
  // After the plan: a schedule file may set the number of ranks that side tasks are pinned to.
  PW_ASSIGN_OR_RETURN(TrainObserverHooks observer, ObserverFor(planned));
  if (is_rank) {
    return RunWorker(planned, plan.schedule, /*print_params=*/false, observer);
  }
  return Launch(planned, plan.schedule);
}

}  // namespace

void AddTrainCommand(CLI::App& app, CommandContext& ctx) {
  auto c = std::make_shared<TrainCommand>();
  CLI::App* cmd = app.add_subcommand("train", "Train the GPT-style model on local ranks with a pipeline schedule");
  c->given = AddJobFlags(cmd, c->job);
  cmd->add_option("--job", c->job_file, "Run the job in FILE (written by the launcher)")->group("");
  cmd->add_flag("--worker", c->worker, "Run one rank (used by the launcher)")->group("");
  cmd->callback([c, &ctx] { ctx.run = [c] { return RunTrain(*c); }; });
}

}  // namespace pw::cli
