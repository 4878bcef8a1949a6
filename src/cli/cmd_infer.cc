// `pipewright infer`: offline batched generation for a JSONL prompt file on
// local data-parallel ranks, with the blocks' weights replicated or pooled
// (weight-as-a-service, compute-as-a-service, or auto). Like `train`, the
// command validates everything once (options, prompt file, every rank's
// memory plan), then re-executes this binary once per rank
// (LaunchLocalRanks, one thread per rank) with a hidden `--worker` flag;
// each worker runs one rank (infer/infer_worker.h) and prints a summary line
// that this side gathers into the job summary. Started by torchrun / mpirun
// / Slurm (RANK etc. set), the command is a worker at once. Results are
// appended as they complete, and a rerun with the same --out resumes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "comm/launcher.h"
#include "comm/world_info.h"
#include "core/text.h"
#include "core/units.h"
#include "infer/infer_worker.h"
#include "infer/prompts_io.h"
#include "model/model_config.h"
#include "runtime/progress.h"
#include "viz/file_output.h"

namespace pw::cli {
namespace {

struct InferCliOptions {
  std::string checkpoint, config;
  uint64_t seed = 1234;
  std::vector<std::string> sets;
  std::string prompts, out;
  int ranks = 1;
  std::string mode = "auto";
  std::string memory_budget = "256MiB";
  int block_size = 16;
  int64_t max_batch_tokens = 256;
  int max_sequences = 256;
  int max_tokens = 64;
  double temperature = 0;
  int top_k = 0;
  double top_p = 1.0;
  uint64_t sampling_seed = 0;
  int end_byte = -1;
  int cache_slots = 3, prefetch_depth = 2;
  std::string summary_json;
  bool predict_crossover = false;
  int timeout_s = 0;
  bool progress = false;  // hidden: relay progress lines to the launcher
  bool worker = false;
};

std::string Absolute(const std::string& path) {
  std::error_code ec;
  return path.empty() ? path : std::filesystem::absolute(path, ec).string();
}

// Options → the job's settings; checks what a user can get wrong.
Result<InferJobOptions> Resolve(const InferCliOptions& o, std::string* source_note) {
  InferJobOptions job;
  if (o.prompts.empty()) return Status::InvalidArgument("--prompts FILE.jsonl is required (one {\"prompt\": ...} per line)");
  if (o.out.empty()) return Status::InvalidArgument("--out FILE.jsonl is required (results are appended there)");
  if (!o.checkpoint.empty() && !o.config.empty()) {
    return Status::InvalidArgument("--checkpoint and --config both given; a checkpoint carries its own config, "
                                   "so pass one of them");
  }
  if (!o.checkpoint.empty() && !o.sets.empty()) {
    return Status::InvalidArgument("--set " + o.sets.front() + " with --checkpoint: the checkpoint fixes the "
                                   "model's shape; use --config (random init) to change it");
  }
  if (!o.checkpoint.empty()) {
    job.source.checkpoint_dir = Absolute(o.checkpoint);
    *source_note = "model: checkpoint " + o.checkpoint;
  } else {
    if (!o.config.empty()) {
      PW_ASSIGN_OR_RETURN(job.source.config, LoadModelConfig(o.config));
    }
    for (const std::string& s : o.sets) {
      if (s.rfind("model.", 0) != 0) {
        return Status::InvalidArgument("--set " + s + ": use model.<key>=<value> (keys of the [model] table)");
      }
    }
    PW_RETURN_IF_ERROR(ApplyOverrides(job.source.config, o.sets));
    job.source.seed = o.seed;
    *source_note = o.config.empty()
                       ? "model: no --checkpoint or --config given, so a random init (seed " + std::to_string(o.seed) +
                             ") of the built-in tiny model (examples/tiny.toml): outputs are noise, for throughput studies"
                       : "model: random init (seed " + std::to_string(o.seed) + ") of " + o.config;
  }
  PW_ASSIGN_OR_RETURN(job.pool.mode, ParsePoolMode(o.mode));
  job.pool.cache_slots = o.cache_slots;
  job.pool.prefetch_depth = o.prefetch_depth;
  if (o.cache_slots < 2 || o.prefetch_depth < 1 || o.prefetch_depth >= o.cache_slots) {
    return Status::InvalidArgument("--cache-slots " + std::to_string(o.cache_slots) + " --prefetch-depth " +
                                   std::to_string(o.prefetch_depth) +
                                   ": need cache-slots >= 2 and 1 <= prefetch-depth < cache-slots");
  }
  Result<double> budget = ParseByteSize(o.memory_budget);
  if (!budget.ok()) return budget.status().WithContext("--memory-budget " + o.memory_budget);
  job.budget_bytes = static_cast<int64_t>(*budget);
  if (o.temperature < 0) return Status::InvalidArgument("--temperature must be >= 0 (0: greedy)");
  if (!(o.top_p > 0 && o.top_p <= 1)) return Status::InvalidArgument("--top-p must be in (0, 1] (1: no cut)");
  if (o.end_byte < -1 || o.end_byte > 255) {
    return Status::InvalidArgument("--end-byte " + std::to_string(o.end_byte) +
                                   ": give a byte value 0..255 (10 = newline), or -1 for none");
  }
  job.sampling = {o.temperature, o.top_k, o.top_p, o.sampling_seed};
  job.prompts_path = Absolute(o.prompts);
  job.out_path = Absolute(o.out);
  const std::filesystem::path out_dir = std::filesystem::path(job.out_path).parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(out_dir, ec)) {
    return Status::NotFound("--out " + o.out + ": directory " + out_dir.string() + " does not exist; create it first");
  }
  job.block_size = o.block_size;
  job.max_batch_tokens = o.max_batch_tokens;
  job.max_sequences = o.max_sequences;
  job.max_tokens = o.max_tokens;
  job.end_byte = o.end_byte;
  job.predict_crossover = o.predict_crossover;
  return job;
}

std::vector<std::string> WorkerArgv(const InferCliOptions& o, const InferJobOptions& job) {
  std::error_code ec;
  std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  std::vector<std::string> argv = {
      self, "infer", "--worker", "--prompts", job.prompts_path, "--out", job.out_path,
      "--mode", o.mode, "--memory-budget", std::to_string(job.budget_bytes),
      "--block-size", std::to_string(o.block_size), "--max-batch-tokens", std::to_string(o.max_batch_tokens),
      "--max-sequences", std::to_string(o.max_sequences), "--max-tokens", std::to_string(o.max_tokens),
      "--temperature", ExactDouble(o.temperature), "--top-k", std::to_string(o.top_k),
      "--top-p", ExactDouble(o.top_p), "--sampling-seed", std::to_string(o.sampling_seed),
      "--end-byte", std::to_string(o.end_byte), "--cache-slots", std::to_string(o.cache_slots),
      "--prefetch-depth", std::to_string(o.prefetch_depth), "--seed", std::to_string(o.seed)};
  if (!o.checkpoint.empty()) argv.insert(argv.end(), {"--checkpoint", Absolute(o.checkpoint)});
  if (!o.config.empty()) argv.insert(argv.end(), {"--config", Absolute(o.config)});
  for (const std::string& s : o.sets) argv.insert(argv.end(), {"--set", s});
  if (o.predict_crossover) argv.push_back("--predict-crossover");
  if (IsTerminal(stdout)) argv.push_back("--progress");
  return argv;
}

// The job summary from the ranks' summary objects.
nlohmann::json JobSummary(const std::vector<nlohmann::json>& ranks, const InferJobOptions& job, double wall_s) {
  using nlohmann::json;
  json j;
  int64_t generated = 0, requests = 0, received = 0, errors = 0, skipped = 0, kv_total = 0, kv_min = -1;
  int64_t passes_was = 0, passes_cas = 0, passes_local = 0, switches = 0;
  int peak_max = 0, peak_sum = 0;
  double slowest = 0;
  bool exact = true;
  for (const json& r : ranks) {
    generated += r["generated_tokens"].get<int64_t>();
    requests += r["requests"].get<int64_t>();
    errors += r["errors"].get<int64_t>();
    skipped += r["skipped_done"].get<int64_t>();
    received += r["pool"]["bytes_received"].get<int64_t>();
    const int64_t kv = r["kv_capacity_tokens"].get<int64_t>();
    kv_total += kv;
    kv_min = kv_min < 0 ? kv : std::min(kv_min, kv);
    peak_max = std::max(peak_max, r["peak_sequences"].get<int>());
    peak_sum += r["peak_sequences"].get<int>();
    passes_was += r["pool"]["passes_was"].get<int64_t>();
    passes_cas += r["pool"]["passes_cas"].get<int64_t>();
    passes_local += r["pool"]["passes_local"].get<int64_t>();
    switches += r["pool"]["switches"].get<int64_t>();
    slowest = std::max(slowest, r["run_seconds"].get<double>());
    exact = exact && r["accounting_exact"].get<bool>();
    if (r.contains("predicted_crossover_rows") && r["rank"] == 0) {
      j["predicted_crossover_rows"] = r["predicted_crossover_rows"];
      j["calibration"] = r["calibration"];
    }
  }
  j["mode"] = ranks.empty() ? "" : ranks[0]["mode"];
  j["ranks"] = static_cast<int64_t>(ranks.size());
  j["budget_per_rank"] = job.budget_bytes;
  j["requests"] = requests;
  j["skipped_done"] = skipped;
  j["errors"] = errors;
  j["generated_tokens"] = generated;
  j["seconds"] = slowest;  // generation time of the slowest rank
  j["wall_seconds"] = wall_s;
  j["tokens_per_s"] = generated / std::max(slowest, 1e-9);
  j["kv_capacity_tokens_per_rank"] = kv_min;
  j["kv_capacity_tokens_total"] = kv_total;
  j["peak_sequences_per_rank"] = peak_max;
  j["peak_sequences_total"] = peak_sum;
  // Every byte moved is received once: count it at the receiver.
  j["bytes_moved_per_token"] = generated > 0 ? static_cast<double>(received) / generated : 0.0;
  j["passes_was"] = passes_was;
  j["passes_cas"] = passes_cas;
  j["passes_local"] = passes_local;
  j["switches"] = switches;
  j["accounting_exact"] = exact;
  j["rank_summaries"] = ranks;
  return j;
}

Status RunInfer(const InferCliOptions& o) {
  std::string source_note;
  PW_ASSIGN_OR_RETURN(InferJobOptions job, Resolve(o, &source_note));
  Result<WorldInfo> env_world = WorldFromEnvironment(ProcessEnvironment());
  if (o.worker || env_world.ok()) {
    if (!env_world.ok()) return env_world.status().WithContext("infer --worker");
    job.progress = o.progress ? ProgressMode::kRelay : ProgressMode::kPlain;
    job.report_bad_lines = !o.worker;  // under torchrun & co. nobody else reports them
    return RunInferRank(job, *env_world);
  }

  // Fail here, once, rather than in every rank.
  PW_ASSIGN_OR_RETURN(ModelConfig config, SourceConfig(job.source));
  PW_ASSIGN_OR_RETURN(PromptFile prompts, ReadPromptFile(job.prompts_path));
  for (const std::string& problem : prompts.problems) {
    std::fprintf(stderr, "warning: %s (line skipped)\n", problem.c_str());
  }
  if (prompts.prompts.empty()) {
    return Status::InvalidArgument("--prompts " + o.prompts + ": no valid prompt in " +
                                   std::to_string(prompts.lines) + " lines; each line needs {\"prompt\": \"...\"}");
  }
  std::vector<MemoryPlan> plans;
  for (int r = 0; r < o.ranks; ++r) {
    Result<MemoryPlan> plan = PlanForRank(job, config, r, o.ranks);
    if (!plan.ok()) {
      return plan.status().WithContext("--memory-budget " + o.memory_budget + " (rank " + std::to_string(r) +
                                       " of " + std::to_string(o.ranks) + ", mode " + o.mode + ")");
    }
    plans.push_back(*plan);
  }
  PW_ASSIGN_OR_RETURN(DoneSet done, ReadDoneIds(job.out_path));
  int64_t already = 0;
  for (const PromptRecord& p : prompts.prompts) already += done.ids.count(p.id);

  std::printf("pipewright infer: %zu prompts (%zu bad lines skipped) on %d local ranks, mode %s, "
              "budget %s per rank, %lld parameters\n",
              prompts.prompts.size(), prompts.problems.size(), o.ranks, o.mode.c_str(),
              FormatBytes(static_cast<double>(job.budget_bytes)).c_str(),
              static_cast<long long>(CountParameters(config)));
  std::printf("%s\n", source_note.c_str());
  std::printf("rank 0 memory: %s\n", DescribePlan(plans[0]).c_str());
  if (already > 0 || done.torn_tail) {
    std::printf("resuming: %lld of %zu prompts already in %s%s\n", static_cast<long long>(already),
                prompts.prompts.size(), o.out.c_str(),
                done.torn_tail ? " (a torn last line from an interrupted run is cut and redone)" : "");
  }
  std::fflush(stdout);
  if (already == static_cast<int64_t>(prompts.prompts.size()) && !done.torn_tail) {
    std::printf("nothing to do: every prompt has a result in %s\n", o.out.c_str());
    return Status::Ok();
  }

  LaunchOptions options;
  options.threads_per_rank = 1;
  if (o.timeout_s > 0) options.timeout = std::chrono::seconds(o.timeout_s);
  ProgressPrinter progress(stdout, IsTerminal(stdout) ? ProgressMode::kInPlace : ProgressMode::kPlain);
  std::vector<nlohmann::json> summaries;
  std::string bad_summary;
  options.sink = [&](int, OutputStream stream, const std::string& line) {
    const size_t at = line.find(kRankSummaryPrefix);
    if (stream == OutputStream::kStdout && at != std::string::npos) {
      nlohmann::json j = nlohmann::json::parse(line.substr(at + kRankSummaryPrefix.size()), nullptr, false);
      if (j.is_object()) {
        summaries.push_back(std::move(j));
      } else {
        bad_summary = line;
      }
      return;
    }
    progress.RelayLine(line, stream == OutputStream::kStdout ? stdout : stderr);
  };
  const auto start = std::chrono::steady_clock::now();
  Status status = LaunchLocalRanks(WorkerArgv(o, job), o.ranks, options);
  progress.Finish();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) {
    return status.WithContext("inference failed (results so far are in " + o.out +
                              "; rerun the same command to resume)");
  }
  if (static_cast<int>(summaries.size()) != o.ranks) {
    return Status::Internal("got " + std::to_string(summaries.size()) + " rank summaries of " +
                            std::to_string(o.ranks) + (bad_summary.empty() ? "" : ": unreadable '" + bad_summary + "'"));
  }
  std::sort(summaries.begin(), summaries.end(),
            [](const nlohmann::json& a, const nlohmann::json& b) { return a["rank"] < b["rank"]; });
  nlohmann::json js = JobSummary(summaries, job, wall);
  std::printf("summary: mode %s, %lld requests (%lld already done, %lld failed), %lld tokens in %.2f s = %.1f tok/s; "
              "kv %lld tokens/rank; peak %d sequences/rank; %.0f B moved/token; passes was %lld cas %lld local %lld, "
              "switches %lld; memory accounting %s\n",
              js["mode"].get<std::string>().c_str(), static_cast<long long>(js["requests"].get<int64_t>()),
              static_cast<long long>(js["skipped_done"].get<int64_t>()),
              static_cast<long long>(js["errors"].get<int64_t>()),
              static_cast<long long>(js["generated_tokens"].get<int64_t>()), js["seconds"].get<double>(),
              js["tokens_per_s"].get<double>(), static_cast<long long>(js["kv_capacity_tokens_per_rank"].get<int64_t>()),
              js["peak_sequences_per_rank"].get<int>(), js["bytes_moved_per_token"].get<double>(),
              static_cast<long long>(js["passes_was"].get<int64_t>()),
              static_cast<long long>(js["passes_cas"].get<int64_t>()),
              static_cast<long long>(js["passes_local"].get<int64_t>()),
              static_cast<long long>(js["switches"].get<int64_t>()),
              js["accounting_exact"].get<bool>() ? "exact" : "MISMATCH (see rank warnings)");
  if (js.contains("predicted_crossover_rows")) {
    std::printf("cost model: WaS beats CaS from %lld rows per pass\n",
                static_cast<long long>(js["predicted_crossover_rows"].get<int64_t>()));
  }
  std::printf("results: %s\n", o.out.c_str());
  if (!o.summary_json.empty()) {
    PW_RETURN_IF_ERROR(WriteFileAtomically(o.summary_json, js.dump(2) + "\n"));
    std::printf("wrote %s (job summary)\n", o.summary_json.c_str());
  }
  return Status::Ok();
}

}  // namespace

void AddInferCommand(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<InferCliOptions>();
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
  cmd->add_option("--checkpoint", o->checkpoint, "Checkpoint directory written by `pipewright train`");
  cmd->add_option("--config", o->config,
                  "Model TOML for a random init (default, without --checkpoint: the built-in tiny model)");
  cmd->add_option("--seed", o->seed, "Seed of the random init")->capture_default_str();
  cmd->add_option("--set", o->sets, "Model override model.key=value (repeatable; random init only)");
  cmd->add_option("--prompts", o->prompts, "JSONL prompt file")->required();
  cmd->add_option("--out", o->out, "JSONL results file (appended; existing results are skipped)")->required();
  cmd->add_option("--ranks", o->ranks, "Local data-parallel ranks")->capture_default_str()->check(CLI::Range(1, 1024));
  cmd->add_option("--mode", o->mode,
                  "Weight pool: replicate (every rank holds every block), was (fetch non-owned blocks), cas "
                  "(send activations to the owner), auto (WaS or CaS per pass by a calibrated cost model)")
      ->capture_default_str();
  cmd->add_option("--memory-budget", o->memory_budget,
                  "Bytes per rank for weights + weight cache + workspace + KV cache, e.g. 64MiB")
      ->capture_default_str();
  cmd->add_option("--block-size", o->block_size, "KV cache block size in tokens")->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("--max-batch-tokens", o->max_batch_tokens, "Most token rows in one forward pass")
      ->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--max-sequences", o->max_sequences, "Most sequences running at once per rank")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-tokens", o->max_tokens, "Tokens to generate per prompt (a line's max_tokens wins)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--temperature", o->temperature, "Sampling temperature (0: greedy)")->capture_default_str();
  cmd->add_option("--top-k", o->top_k, "Keep the k most likely tokens (0: all)")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--top-p", o->top_p, "Nucleus: keep the most likely tokens up to this mass")->capture_default_str();
  cmd->add_option("--sampling-seed", o->sampling_seed, "Seed of sampling (with the prompt index)")->capture_default_str();
  cmd->add_option("--end-byte", o->end_byte, "Stop a sequence after this byte (10: newline; -1: none)")->capture_default_str();
  cmd->add_option("--cache-slots", o->cache_slots, "WaS/auto: weight cache slots (blocks)")->capture_default_str();
  cmd->add_option("--prefetch-depth", o->prefetch_depth, "WaS/auto: blocks fetched ahead")->capture_default_str();
  cmd->add_option("--summary-json", o->summary_json, "Write the job summary (per-rank figures too) to FILE");
  cmd->add_flag("--predict-crossover", o->predict_crossover,
                "Calibrate the cost model at start-up (GEMM speed, link latency and bandwidth; auto always "
                "does) and report its WaS/CaS crossover batch size");
  cmd->add_option("--timeout", o->timeout_s, "Stop the job after this many seconds (0: none)");
  cmd->add_flag("--progress", o->progress, "Relay a progress line (used by the launcher)")->group("");
  cmd->add_flag("--worker", o->worker, "Run one rank (used by the launcher)")->group("");
  cmd->callback([o, &ctx] { ctx.run = [o] { return RunInfer(*o); }; });
}

}  // namespace pw::cli
