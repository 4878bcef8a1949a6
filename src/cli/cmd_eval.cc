// `pipewright eval`: the per-token loss, perplexity and bits per byte of a
// checkpoint (or a random init) on a text, data-parallel over local ranks
// (infer/eval.h). The flags are the fields of an EvalJob (job/eval_job.h).
// Like `infer`, the command checks its input once, then re-executes this
// binary once per rank with `--worker --job FILE`; started by torchrun /
// mpirun / Slurm (RANK etc. set), it is a worker at once.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "cli/command.h"
#include "cli/job_flags.h"
#include "cli/launch_job.h"
#include "comm/world_info.h"
#include "core/file_io.h"
#include "infer/eval.h"
#include "infer/infer_settings.h"
#include "job/eval_job.h"
#include "os/process.h"
#include "os/atomic_file.h"

namespace pw::cli {
namespace {

struct EvalCommand {
  EvalJob job;
  std::string job_file;  // hidden: the launcher's job file (worker ranks)
  std::function<bool(std::string_view)> given;
  bool worker = false;   // hidden: run one rank
};

// What every rank would otherwise find wrong, once, before any starts.
Status Preflight(const EvalJob& job) {
  if (job.data.empty()) return Status::InvalidArgument("--data FILE is required: the text to score");
  std::error_code ec;
  if (std::filesystem::is_directory(job.data, ec)) {
    return Status::InvalidArgument("--data " + job.data + " is a directory; give one text file");
  }
  const std::uintmax_t bytes = std::filesystem::file_size(job.data, ec);
  if (ec) return Status::NotFound("--data " + job.data + ": " + ec.message());
  PW_RETURN_IF_ERROR(CheckEvalTextLength(job.data, static_cast<int64_t>(bytes)));
  std::string note;
  PW_ASSIGN_OR_RETURN(WeightSource source, ResolveWeightSource(job.checkpoint, job.model_dir, job.config, job.set, job.seed, &note));
  return SourceConfig(source).status();
}

// Prints the figures (text, or the JSON object with --json) and writes
// --summary-json.
Status Report(const EvalJob& job, std::string figures) {
  while (!figures.empty() && figures.back() == '\n') figures.pop_back();
  std::printf("%s\n", job.json ? figures.c_str() : EvalText(figures).c_str());
  std::fflush(stdout);
  if (job.summary_json.empty()) return Status::Ok();
  return WriteFile(job.summary_json, figures + "\n", Durability::kAtomic).WithContext("--summary-json");
}

Status RunEval(const EvalCommand& c) {
  EvalJob job = c.job;
  if (!c.job_file.empty()) {
    PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile(c.job_file));
    PW_ASSIGN_OR_RETURN(job, EvalJobFromJson(text, c.job_file));
  }
  PW_RETURN_IF_ERROR(CheckFieldRanges(job));
  Result<WorldInfo> env_world = WorldFromEnvironment(ProcessEnvironment());
  if (c.worker || env_world.ok()) {
    if (!env_world.ok()) return env_world.status().WithContext("eval --worker");
    PW_RETURN_IF_ERROR(CheckRanksMatchLauncher(!c.worker && c.given && c.given("ranks"), job.ranks, *env_world));
    PW_ASSIGN_OR_RETURN(std::string figures, RunEvalRank(job, *env_world));
    if (figures.empty()) return Status::Ok();  // not world rank 0
    if (!job.result_file.empty()) return WriteFile(job.result_file, figures + "\n", Durability::kAtomic);
    return Report(job, figures);  // started by torchrun & co.: rank 0 reports
  }
  PW_RETURN_IF_ERROR(Preflight(job));
  EvalJob for_workers = job;
  for_workers.result_file = std::filesystem::temp_directory_path() /
                            ("pipewright-eval-" + std::to_string(ProcessId()) + ".result.json");
  struct Remover {
    std::string path;
    ~Remover() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  } remover{for_workers.result_file};
  PW_RETURN_IF_ERROR(LaunchJobRanks(
                         "eval", [&for_workers](bool) { return EvalJobToJson(for_workers); }, job.ranks,
                         job.timeout, job.collective_timeout)
                         .WithContext("eval failed"));
  PW_ASSIGN_OR_RETURN(std::string figures, ReadTextFile(for_workers.result_file));
  return Report(job, figures);
}

}  // namespace

void AddEvalCommand(CLI::App& app, CommandContext& ctx) {
  auto c = std::make_shared<EvalCommand>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Score a text with a checkpoint: per-token loss, perplexity and bits per byte, on local "
              "data-parallel ranks");
  cmd->footer(
      "The text's bytes are the tokens, in windows of the model's seq_len; every byte but the first is\n"
      "predicted once. See docs/inference.md (Scoring).\n"
      "Example: pipewright eval --checkpoint ckpt --data /usr/share/common-licenses/GPL-3 --ranks 2");
  c->given = AddJobFlags(cmd, c->job);
  cmd->add_option("--job", c->job_file, "Run the job in FILE (written by the launcher)")->group("");
  cmd->add_flag("--worker", c->worker, "Run one rank (used by the launcher)")->group("");
  cmd->callback([c, &ctx] { ctx.run = [c] { return RunEval(*c); }; });
}

}  // namespace pw::cli
