// `pipewright infer`: offline batched generation for a JSONL prompt file on
// local data-parallel ranks, with the blocks' weights replicated or pooled
// (weight-as-a-service, compute-as-a-service, or auto). The flags are the
// fields of an InferJob (job/infer_job.h). Like `train`, the command checks
// everything once (settings, prompt file, every rank's memory plan), writes
// the job to a file and re-executes this binary once per rank
// (LaunchLocalRanks, one thread per rank) with `--worker --job FILE`; each
// worker runs one rank (infer/infer_worker.h), and world rank 0 prints the
// job summary. Started by torchrun / mpirun / Slurm (RANK etc. set), the
// command is a worker at once. Results are appended as they complete, and
// a rerun with the same --out resumes.
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"
#include "cli/job_flags.h"
#include "cli/launch_job.h"
#include "comm/world_info.h"
#include "core/file_io.h"
#include "core/units.h"
#include "infer/infer_settings.h"
#include "infer/infer_worker.h"
#include "infer/prompts_io.h"
#include "job/infer_job.h"
#include "model/model_config.h"

namespace pw::cli {
namespace {

struct InferCommand {
  InferJob job;
  std::string job_file;  // hidden: the launcher's job file (worker ranks)
  std::function<bool(std::string_view)> given;  // flag given on the command line
  bool worker = false;   // hidden: run one rank
};

// The checks and the header the launcher prints before any rank starts;
// false when every prompt already has a result.
Result<bool> Preflight(const InferJob& job, const InferSettings& settings) {
  PW_ASSIGN_OR_RETURN(ModelConfig config, SourceConfig(settings.source));
  PW_ASSIGN_OR_RETURN(PromptFile prompts, ReadPromptFile(job.prompts));
  // A --json-schema that cannot be honoured fails here, before any rank starts.
  PW_RETURN_IF_ERROR(ApplyJobSchema(job, prompts.prompts));
  for (const std::string& problem : prompts.problems) {
    std::fprintf(stderr, "warning: %s (line skipped)\n", problem.c_str());
  }
  if (prompts.prompts.empty()) {
    return Status::InvalidArgument("--prompts " + job.prompts + ": no valid prompt in " +
                                   std::to_string(prompts.lines) + " lines; each line needs {\"prompt\": \"...\"}");
  }
  std::vector<MemoryPlan> plans;
  for (int r = 0; r < job.ranks; ++r) {
    Result<MemoryPlan> plan = PlanForRank(job, settings, config, prompts.prompts, r, job.ranks);
    if (!plan.ok()) {
      return plan.status().WithContext("--memory-budget " + job.memory_budget + " (rank " + std::to_string(r) +
                                       " of " + std::to_string(job.ranks) + ", mode " + job.mode + ")");
    }
    plans.push_back(*plan);
  }
  PW_ASSIGN_OR_RETURN(DoneSet done, ReadDoneIds(job.out));
  int64_t already = 0;
  for (const PromptRecord& p : prompts.prompts) already += done.ids.count(p.id);

  std::printf("pipewright infer: %zu prompts (%zu bad lines skipped) on %d local ranks, mode %s, "
              "budget %s per rank, %lld parameters\n",
              prompts.prompts.size(), prompts.problems.size(), job.ranks, job.mode.c_str(),
              FormatBytes(static_cast<double>(settings.budget_bytes)).c_str(),
              static_cast<long long>(CountParameters(config)));
  std::printf("%s\n", settings.source_note.c_str());
  if (!settings.budget_note.empty()) std::printf("memory budget %s\n", settings.budget_note.c_str());
  std::printf("rank 0 memory: %s\n", DescribePlan(plans[0]).c_str());
  if (already > 0 || done.torn_tail) {
    std::printf("resuming: %lld of %zu prompts already in %s%s\n", static_cast<long long>(already),
                prompts.prompts.size(), job.out.c_str(),
                done.torn_tail ? " (a torn last line from an interrupted run is cut and redone)" : "");
  }
  std::fflush(stdout);
  if (already == static_cast<int64_t>(prompts.prompts.size()) && !done.torn_tail) {
    std::printf("nothing to do: every prompt has a result in %s\n", job.out.c_str());
    return false;
  }
  return true;
}

Status Launch(const InferJob& job, const InferSettings& settings) {
  PW_ASSIGN_OR_RETURN(bool work_to_do, Preflight(job, settings));
  if (!work_to_do) return Status::Ok();
  Status status = LaunchJobRanks(
      "infer",
      [&job, &settings](bool relay_progress) {
        InferJob for_workers = job;
        for_workers.progress = relay_progress;
        // One budget for every rank: auto read once, here.
        for_workers.memory_budget = std::to_string(settings.budget_bytes);
        return InferJobToJson(for_workers);
      },
      job.ranks, job.timeout, job.collective_timeout);
  if (!status.ok()) {
    return status.WithContext("inference failed (results so far are in " + job.out +
                              "; rerun the same command to resume)");
  }
  return Status::Ok();
}

Status RunInfer(const InferCommand& c) {
  InferJob job = c.job;
  if (!c.job_file.empty()) {
    PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile(c.job_file));
    PW_ASSIGN_OR_RETURN(job, InferJobFromJson(text, c.job_file));
  }
  PW_ASSIGN_OR_RETURN(InferSettings settings, ResolveInferJob(job));
  Result<WorldInfo> env_world = WorldFromEnvironment(ProcessEnvironment());
  if (c.worker || env_world.ok()) {
    if (!env_world.ok()) return env_world.status().WithContext("infer --worker");
    PW_RETURN_IF_ERROR(CheckRanksMatchLauncher(!c.worker && c.given && c.given("ranks"), job.ranks, *env_world));
    // Under torchrun & co. no launcher reported the prompt file's bad lines.
    return RunInferRank(job, settings, *env_world, /*report_bad_lines=*/!c.worker);
  }
  return Launch(job, settings);
}

}  // namespace

void AddInferCommand(CLI::App& app, CommandContext& ctx) {
  auto c = std::make_shared<InferCommand>();
  CLI::App* cmd = app.add_subcommand(
      "infer", "Generate text for a JSONL prompt file on local data-parallel ranks (paged KV cache, "
               "continuous batching, replicated or pooled weights); results are appended and resumable");
  cmd->footer(
      "Prompt file: one JSON object per line, {\"id\": \"q1\", \"prompt\": \"text\", \"max_tokens\": 32}\n"
      "(id defaults to the line number; bad lines are reported and skipped).\n"
      "Results: one line per prompt, {\"id\",\"index\",\"text\",\"tokens\",\"finish_reason\",...};\n"
      "rerun with the same --out to resume. See docs/inference.md.\n"
      "Example: pipewright infer --prompts examples/prompts.jsonl --out out.jsonl --ranks 4 --mode auto "
      "--memory-budget 64MiB");
  c->given = AddJobFlags(cmd, c->job);
  cmd->add_option("--job", c->job_file, "Run the job in FILE (written by the launcher)")->group("");
  cmd->add_flag("--worker", c->worker, "Run one rank (used by the launcher)")->group("");
  cmd->callback([c, &ctx] { ctx.run = [c] { return RunInfer(*c); }; });
}

}  // namespace pw::cli
