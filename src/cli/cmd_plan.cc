// `pipewright plan`: the automated scheduler. Searches placements, split or
// fused backward, stage boundaries (--layers) and .pipe order policies, plus
// every built-in family, under a cost model and a memory cap; prints the
// best schedules, the time/memory Pareto front, the lower bound and what
// the search cost, and writes the winner as a .pipe file (search/planner.h,
// docs/planner.md).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/number_checks.h"
#include "cli/schedule_options.h"
#include "core/units.h"
#include "dsl/parser.h"
#include "os/atomic_file.h"
#include "search/planner.h"
#include "sim/cost_model_json.h"

namespace pw::cli {
namespace {

struct PlanOptions {
  ScheduleOptions costs;  // only the cost options are registered
  int ranks = 4;
  int microbatches = 8;
  int layers = 0;
  double time_limit = 10;
  int64_t max_candidates = 0;
  uint64_t seed = 1;
  int max_chunks = 4;
  size_t top = 5;
  bool json = false;
  bool no_builtins = false;
  std::string out;
  std::string out_costs;
  std::string side_task_profile;  // JSON {"step", "memory_bytes"}: also pick for harvesting
};

std::string Memory(double v, bool shares) {
  if (!shares) return FormatBytes(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string Percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * x);
  return buf;
}

// I + W over B, summed over the stages whose costs give all three (a
// profile measures them); nullopt without any.
std::optional<double> SplitBackwardRatio(const CostModel& costs) {
  double split = 0, fused = 0;
  for (const StageCost& c : costs.stages) {
    if (!c.backward_input || !c.backward_weight || !c.backward || *c.backward <= 0) continue;
    split += *c.backward_input + *c.backward_weight;
    fused += *c.backward;
  }
  if (fused <= 0) return std::nullopt;
  return split / fused;
}

nlohmann::json SummaryJson(const search::CandidateSummary& c) {
  nlohmann::json j{{"origin", c.origin},         {"name", c.name},
                   {"family", c.family},         {"policy", c.policy},
                   {"stages", c.num_stages},     {"makespan", c.makespan},
                   {"peak_memory", c.peak_memory}, {"bubble_ratio", c.bubble_ratio},
                   {"lower_bound", c.lower_bound}, {"fits", c.fits}};
  if (!c.layers_per_stage.empty()) j["layers_per_stage"] = c.layers_per_stage;
  return j;
}

nlohmann::json HarvestJson(const search::CandidateSummary& c) {
  nlohmann::json j = SummaryJson(c);
  j["side_work"] = c.side_work;
  j["side_work_best_rank"] = c.side_work_best_rank;
  j["net_gain"] = c.net_gain;
  return j;
}

// The schedule -o writes: the harvest pick with a side-task profile, else the fastest.
const search::PlannedSchedule& Chosen(const search::PlanResult& r) {
  return r.harvest_pick ? *r.harvest_pick : r.best;
}

nlohmann::json PlanJson(const PlanOptions& o, int layers, const search::PlanResult& r) {
  nlohmann::json j;
  j["request"] = {{"ranks", o.ranks}, {"microbatches", o.microbatches}, {"layers", layers},
                  {"time_limit", o.time_limit}, {"seed", o.seed}};
  j["request"]["memory_cap"] = r.memory_cap ? nlohmann::json(*r.memory_cap) : nlohmann::json(nullptr);
  j["request"]["cluster"] = r.best.costs.cluster.Describe();
  j["memory_unit"] = r.memory_in_microbatches ? "microbatch shares" : "bytes";
  j["best"] = SummaryJson(r.best.summary);
  j["best"]["pinned"] = r.best.pinned;
  j["best"]["training_step"] = r.best.training_step;
  j["best_builtin"] = r.best_builtin ? SummaryJson(*r.best_builtin) : nlohmann::json(nullptr);
  j["lower_bound"] = r.lower_bound;
  j["gap_to_lower_bound"] = r.best.summary.makespan / r.lower_bound - 1;
  if (r.best_builtin) j["saving_vs_best_builtin"] = 1 - r.best.summary.makespan / r.best_builtin->makespan;
  for (const char* key : {"pareto", "top", "builtins"}) j[key] = nlohmann::json::array();
  for (const auto& c : r.pareto) j["pareto"].push_back(SummaryJson(c));
  for (const auto& c : r.top) j["top"].push_back(SummaryJson(c));
  for (const auto& c : r.builtins) j["builtins"].push_back(SummaryJson(c));
  if (r.harvest_pick) {
    j["harvest"]["pick"] = HarvestJson(r.harvest_pick->summary);
    j["harvest"]["pick"]["training_step"] = r.harvest_pick->training_step;
    j["harvest"]["fastest"] = HarvestJson(r.best.summary);
    j["harvest"]["top"] = nlohmann::json::array();
    for (const auto& c : r.harvest_top) j["harvest"]["top"].push_back(HarvestJson(c));
  }
  j["best"]["split_backward"] = r.best.schedule.UsesSplitBackward();
  if (const std::optional<double> ratio = SplitBackwardRatio(r.best.costs)) j["best"]["split_over_fused"] = *ratio;
  const search::SearchStats& s = r.stats;
  j["search"] = {{"evaluated", s.evaluated},           {"over_cap", s.over_cap},
                 {"failed", s.failed},                 {"families", s.families},
                 {"families_pruned", s.families_pruned}, {"candidates_pruned", s.candidates_pruned},
                 {"seconds", s.seconds},               {"cpu_seconds", s.cpu_seconds},
                 {"timed_out", s.timed_out}};
  return j;
}

// Whether the best splits its backward, and what a split costs here: a
// fused winner where I + W > B says why ("split backward costs 1.09x the
// fused one here: fused 1f1b chosen").
std::string BackwardLine(const search::PlannedSchedule& best) {
  const std::optional<double> ratio = SplitBackwardRatio(best.costs);
  char buf[200];
  if (best.schedule.UsesSplitBackward()) {
    if (!ratio) return "backward      split (I and W apart)";
    std::snprintf(buf, sizeof buf, "backward      split (I + W = %.2fx B in these costs)", *ratio);
    return buf;
  }
  if (ratio && *ratio > 1.0) {
    std::snprintf(buf, sizeof buf, "backward      fused: split backward costs %.2fx the fused one here; %s chosen",
                  *ratio, best.summary.family.c_str());
    return buf;
  }
  return "backward      fused (B)";
}

void PrintRow(const search::CandidateSummary& c, double lower_bound, bool shares) {
  std::printf("  %10.3f %7s %10s  %-16s %s; %s\n", c.makespan, Percent(c.makespan / lower_bound - 1).c_str(),
              Memory(c.peak_memory, shares).c_str(), c.origin.c_str(), c.family.c_str(), c.policy.c_str());
}

void PrintPlan(const PlanOptions& o, int layers, const search::PlanResult& r) {
  const bool shares = r.memory_in_microbatches;
  const search::SearchStats& s = r.stats;
  std::printf("plan: %d ranks, %d microbatches%s, memory cap %s%s\n", o.ranks, o.microbatches,
              layers > 0 ? (", " + std::to_string(layers) + " layers").c_str() : "",
              r.memory_cap ? Memory(*r.memory_cap, shares).c_str() : "none",
              shares ? " (memory in microbatches of one rank's share)" : "");
  if (!r.best.costs.cluster.uniform()) std::printf("cluster: %s\n", r.best.costs.cluster.Describe().c_str());
  if (r.memory_cap) {
    // Under a cap the search tries recomputation: say how it is priced.
    const bool measured = std::any_of(r.best.costs.stages.begin(), r.best.costs.stages.end(), [](const StageCost& c) {
      return c.recompute.has_value() || c.HasBackwardAfterRecompute();
    });
    std::printf("recomputation: %s\n",
                measured ? "priced with the measured times in the costs (RECOMPUTE, the backward after it)"
                         : "priced as F again, the backward unchanged (a profile of a run that recomputes "
                           "measures both: docs/cost-model.md)");
  }
  std::printf("search: %lld candidates evaluated (%lld over the cap, %lld could not compile) in %.2f s "
              "(%.2f s CPU); "
              "%lld of %lld families pruned by their bound (%lld policies skipped)%s\n\n",
              static_cast<long long>(s.evaluated), static_cast<long long>(s.over_cap),
              static_cast<long long>(s.failed), s.seconds, s.cpu_seconds, static_cast<long long>(s.families_pruned),
              static_cast<long long>(s.families), static_cast<long long>(s.candidates_pruned),
              s.timed_out ? "; stopped by the time limit" : "");
  const search::CandidateSummary& b = r.best.summary;
  std::printf("best          %10.3f  peak %s  %s; %s\n", b.makespan, Memory(b.peak_memory, shares).c_str(),
              b.family.c_str(), b.policy.c_str());
  std::printf("%s\n", BackwardLine(r.best).c_str());
  if (r.best.training_step > 0) {
    std::printf("training step %10.3f  (the best lowered as train runs it: sends, receives, gradient sync "
                "and the optimizer step at the cost model's prices)\n", r.best.training_step);
  }
  if (r.best_builtin) {
    std::printf("best built-in %10.3f  peak %s  %s  (the plan saves %s)\n", r.best_builtin->makespan,
                Memory(r.best_builtin->peak_memory, shares).c_str(), r.best_builtin->name.c_str(),
                Percent(1 - b.makespan / r.best_builtin->makespan).c_str());
  } else if (o.no_builtins) {
    std::printf("best built-in        not tried (--no-builtins)\n");
  } else {
    std::printf("best built-in        none fits the memory cap\n");
  }
  std::printf("lower bound   %10.3f  (the plan is %s above it)\n\n", r.lower_bound,
              Percent(b.makespan / r.lower_bound - 1).c_str());
  std::printf("  %10s %7s %10s  %-16s %s\n", "makespan", "vs LB", "peak mem", "origin", "schedule");
  std::printf("top %zu:\n", std::min(o.top, r.top.size()));
  for (size_t i = 0; i < r.top.size() && i < o.top; ++i) PrintRow(r.top[i], r.lower_bound, shares);
  std::printf("Pareto front (makespan vs peak memory):\n");
  for (const auto& c : r.pareto) PrintRow(c, r.lower_bound, shares);
  if (!r.harvest_pick) return;
  // Side work and net gain are rank-time per training step (search/harvest_score.h).
  const search::CandidateSummary& h = r.harvest_pick->summary;
  std::printf("\nwith the side task (%s): bubbles hold %.3f of task time per step (%.3f on the best rank), "
              "net gain %.3f\n",
              o.side_task_profile.c_str(), h.side_work, h.side_work_best_rank, h.net_gain);
  std::printf("harvest pick  %10.3f  (%s slower than the best)  %s; %s\n", h.makespan,
              Percent(h.makespan / b.makespan - 1).c_str(), h.family.c_str(), h.policy.c_str());
  std::printf("  %10s %10s %10s %10s  %s\n", "makespan", "side work", "best rank", "net gain", "schedule");
  for (size_t i = 0; i < r.harvest_top.size() && i < o.top; ++i) {
    const search::CandidateSummary& c = r.harvest_top[i];
    std::printf("  %10.3f %10.3f %10.3f %10.3f  %s; %s\n", c.makespan, c.side_work, c.side_work_best_rank,
                c.net_gain, c.family.c_str(), c.policy.c_str());
  }
}

// A cost file with the model's per-layer costs (a training profile) puts
// the planner in layers mode: it chooses boundaries between the model's
// blocks and never more stages than blocks, so every plan can be trained.
// Returns the number of layers to plan with (o.layers, or the file's).
Result<int> UseFileLayers(const PlanOptions& o, CostModel& costs, std::string* note) {
  if (o.costs.cost_file.empty()) return o.layers;
  PW_ASSIGN_OR_RETURN(CostFile file, LoadCostFile(o.costs.cost_file));
  if (file.layers.empty()) return o.layers;
  const int n = static_cast<int>(file.layers.size());
  if (o.layers > 0 && o.layers != n) {
    return Status::InvalidArgument("--layers " + std::to_string(o.layers) + " contradicts " + o.costs.cost_file +
                                   ", a profile of a model with n_layers = " + std::to_string(n) +
                                   "; drop --layers (the file's layers are used)");
  }
  if (!o.costs.cost.empty()) {
    return Status::InvalidArgument("--cost sets uniform costs but " + o.costs.cost_file +
                                   " has a table per layer; use one");
  }
  // The per-entry flags set every stage entry alike; they apply to the
  // layer entries the same way.
  const StageCost& flags = costs.stages.front();
  for (StageCost& l : file.layers) {
    if (!o.costs.activation_bytes.empty()) l.activation_bytes = flags.activation_bytes;
    if (!o.costs.output_bytes.empty()) l.output_bytes = flags.output_bytes;
  }
  costs.stages = std::move(file.layers);
  *note = "costs: per layer from " + o.costs.cost_file + " (" + std::to_string(n) + " layers)";
  return n;
}

// Where -o's costs go without --out-costs: best.pipe -> best.costs.json.
std::string CostsBeside(const std::string& pipe_path) {
  std::filesystem::path p(pipe_path);
  if (p.extension() == ".pipe") p.replace_extension();
  return p.string() + ".costs.json";
}

// `target` as the program at `pipe_path` names it: relative to the
// program's directory when it lies in it or below (so the two can move
// together), else absolute (a path out of the directory would break when
// the program alone moves).
std::string PathFrom(const std::string& pipe_path, const std::string& target) {
  const std::filesystem::path dir = std::filesystem::absolute(pipe_path).parent_path().lexically_normal();
  const std::filesystem::path to = std::filesystem::absolute(target).lexically_normal();
  const std::filesystem::path relative = to.lexically_relative(dir);
  if (relative.empty() || *relative.begin() == "..") return to.string();
  return relative.string();
}

// `path` as one shell word, for a command line the user may paste.
std::string ShellWord(const std::string& path) {
  const bool plain = !path.empty() && path.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                             "0123456789_./-+,:=@%") == std::string::npos;
  if (plain) return path;
  std::string out = "'";
  for (char c : path) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool SameFile(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec)) return std::filesystem::equivalent(a, b, ec);
  return std::filesystem::absolute(a).lexically_normal() == std::filesystem::absolute(b).lexically_normal();
}

// The output files, checked before the search: distinct from each other and
// from the input, in directories that exist.
Status CheckPlanOutputs(const PlanOptions& o, const std::string& costs_out) {
  if (!o.out.empty() && !costs_out.empty() && SameFile(o.out, costs_out)) {
    return Status::InvalidArgument("--out-costs " + costs_out + " is the -o file; give the costs their own file "
                                   "(or leave --out-costs out: they go beside the program)");
  }
  if (!costs_out.empty() && !o.costs.cost_file.empty() && SameFile(costs_out, o.costs.cost_file)) {
    return Status::InvalidArgument("the plan's costs would overwrite --cost-file " + o.costs.cost_file +
                                   "; write them elsewhere with --out-costs FILE");
  }
  for (const auto& [flag, path] : {std::pair<const char*, std::string>{"-o", o.out}, {"--out-costs", costs_out}}) {
    if (path.empty()) continue;
    const std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) {
      return Status::InvalidArgument(std::string(flag) + " " + path + ": no directory " + dir.string() +
                                     "; create it first");
    }
  }
  return Status::Ok();
}

Status RunPlan(const PlanOptions& o) {
  // A policy's order follows the costs it is list-scheduled with, so the
  // program names the costs it was planned with and carries them along.
  const std::string costs_out = !o.out_costs.empty() ? o.out_costs : o.out.empty() ? "" : CostsBeside(o.out);
  PW_RETURN_IF_ERROR(CheckPlanOutputs(o, costs_out));
  search::PlanRequest req;
  req.ranks = o.ranks;
  req.microbatches = o.microbatches;
  // Unresolved: the planner resolves it per stage split.
  PW_ASSIGN_OR_RETURN(req.costs, BuildUnresolvedCostModel(o.costs));
  std::string note;
  PW_ASSIGN_OR_RETURN(req.num_layers, UseFileLayers(o, req.costs, &note));
  req.time_limit_s = o.time_limit;
  req.max_candidates = o.max_candidates;
  req.seed = o.seed;
  req.keep_top = std::max<size_t>(o.top, 10);
  req.space.max_chunks = o.max_chunks;
  req.space.builtins = !o.no_builtins;
  if (!o.side_task_profile.empty()) {
    PW_ASSIGN_OR_RETURN(req.side_task, search::LoadSideTaskProfile(o.side_task_profile));
  }
  PW_ASSIGN_OR_RETURN(search::PlanResult result, search::Plan(req));
  const search::PlannedSchedule& chosen = Chosen(result);
  if (!costs_out.empty()) PW_RETURN_IF_ERROR(WriteFile(costs_out, FormatCostModelJson(chosen.costs), Durability::kAtomic));
  if (!o.out.empty()) {
    dsl::PipeProgram program = chosen.program;
    program.costs_file = PathFrom(o.out, costs_out);
    PW_RETURN_IF_ERROR(WriteFile(o.out, dsl::FormatPipeProgram(program), Durability::kAtomic));
  }
  if (o.json) {
    std::printf("%s\n", PlanJson(o, req.num_layers, result).dump(2).c_str());
    return Status::Ok();
  }
  if (!note.empty()) std::printf("%s\n", note.c_str());
  PrintPlan(o, req.num_layers, result);
  if (!o.out.empty()) {
    const std::vector<int>& split = chosen.program.layers_per_stage;
    std::string layers;
    for (int n : split) layers += " " + std::to_string(n);
    std::printf("\nwrote %s (%s%s%s)\n", o.out.c_str(), result.harvest_pick ? "the harvest pick, " : "",
                chosen.pinned ? "pinned programs of a built-in order" : "a policy",
                split.empty() ? "" : ("; layers" + layers).c_str());
  }
  if (!costs_out.empty()) {
    std::printf("wrote %s (the per-stage costs it was planned with%s)\n", costs_out.c_str(),
                o.out.empty() ? "" : "; the program's costs line names it: keep the two together");
  }
  if (!o.out.empty()) std::printf("train it: pipewright train --schedule %s\n", ShellWord(o.out).c_str());
  return Status::Ok();
}

}  // namespace

void AddPlanCommand(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "Search for the fastest schedule under a cost model and memory cap (automated scheduler)");
  cmd->add_option("-p,--ranks", opts->ranks, "Pipeline ranks p")->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("-m,--microbatches", opts->microbatches, "Microbatches m per iteration")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  AddCostOptions(*cmd, opts->costs);
  cmd->get_option("--memory-cap")
      ->description("Memory per rank (static included); schedules above it are discarded. Without "
                    "--activation-bytes, memory counts microbatches of one rank's share (e.g. --memory-cap 8)");
  cmd->get_option("--cost-file")
      ->description("JSON cost model (docs/cost-model.md): one entry per stage, or per layer with --layers; "
                    "a profile written by `train --profile-out` carries the model's layers, which the plan "
                    "then splits (no --layers needed)");
  cmd->add_option("--layers", opts->layers,
                  "Number of layers; the cost table (one entry, or one per layer) is per layer and the planner "
                  "also chooses stage boundaries")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--time-limit", opts->time_limit, "Search budget in seconds")
      ->capture_default_str()
      ->check(Positive());
  cmd->add_option("--max-candidates", opts->max_candidates,
                  "Stop after this many candidates (0: no limit); with it the result is the same on every machine")
      ->check(NonNegative());
  cmd->add_option("--seed", opts->seed, "Seed of the local search's move order")->capture_default_str();
  cmd->add_option("--max-chunks", opts->max_chunks, "Largest v tried for interleaved placements")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  cmd->add_option("--top", opts->top, "Rows of the best-schedules table")->capture_default_str();
  cmd->add_flag("--no-builtins", opts->no_builtins, "Do not seed the search with the built-in families");
  cmd->add_flag("--json", opts->json, "Print the result as one JSON object");
  cmd->add_option("--side-task-profile", opts->side_task_profile,
                  "JSON {\"step\": T, \"memory_bytes\": M}: a side task's step length (cost-model time unit) and "
                  "memory; also scores schedules by the task time their bubbles hold (a bubble holds whole steps "
                  "only) against the training time they cost, and -o writes that harvest pick")
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--out", opts->out,
                  "Write the best schedule (with --side-task-profile: the harvest pick) as a .pipe file, and the "
                  "costs it was planned with beside it (best.pipe: best.costs.json, or --out-costs), named by "
                  "its costs line so that train and schedule compile and simulate the planned order");
  cmd->add_option("--out-costs", opts->out_costs,
                  "Where to write the per-stage cost table of the chosen schedule (its stage split) as JSON: "
                  "the costs its .pipe program was list-scheduled with; default with -o: beside the program");
  cmd->callback([opts, &ctx] { ctx.run = [opts] { return RunPlan(*opts); }; });
}

}  // namespace pw::cli
