// `pipewright schedule compare`: simulates every built-in family for the
// same ranks, microbatches and costs, and prints them ranked by makespan —
// the quickest way to see what a schedule buys.
#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/schedule_options.h"
#include "core/units.h"
#include "schedule/generators.h"
#include "sim/simulator.h"

namespace pw::cli {
namespace {

struct CompareOptions {
  ScheduleOptions schedule;
  bool json = false;
  bool per_stage_costs = false;
};

struct Row {
  std::string family;
  std::string error;  // why the family does not apply, if it does not
  int stages = 0;
  double makespan = 0, bubble_ratio = 0, peak_memory = 0;
  bool cap_violated = false;
};

// Same model on every family: with v stages per rank each stage does 1/v of
// the rank's work and holds 1/v of its activations, unless the user asked for
// per-stage costs.
void NormalizeToChunks(CostModel& costs, const Schedule& s, bool activations_given) {
  const double v = static_cast<double>(s.num_stages()) / s.num_ranks();
  for (StageCost& c : costs.stages) {
    for (std::optional<double>* t : {&c.forward, &c.backward, &c.backward_input, &c.backward_weight, &c.recompute,
                                     &c.backward_after_recompute, &c.backward_input_after_recompute,
                                     &c.backward_weight_after_recompute}) {
      if (*t) **t /= v;
    }
    c.activation_bytes = activations_given ? c.activation_bytes / v : 1.0 / v;
  }
}

Status RunCompare(const CompareOptions& opts) {
  std::vector<Row> rows;
  // Every row is a built-in family: a --schedule file (and its costs line)
  // plays no part.
  ScheduleOptions shape = opts.schedule;
  shape.schedule = BuiltinScheduleNames().front();
  PW_ASSIGN_OR_RETURN(dsl::ScheduleSource source, ToScheduleSource(shape));
  for (const std::string& family : BuiltinScheduleNames()) {
    Row row{family};
    source.schedule = family;
    Result<Schedule> s = dsl::LoadSchedule(source);
    if (!s.ok()) {
      row.error = s.status().message();
      rows.push_back(row);
      continue;
    }
    PW_ASSIGN_OR_RETURN(CostModel costs, BuildCostModel(shape, *s));
    if (!opts.per_stage_costs) NormalizeToChunks(costs, *s, !opts.schedule.activation_bytes.empty());
    SimOptions sim_options;
    sim_options.record_spans = false;
    sim_options.record_bubbles = false;
    PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(*s, costs, sim_options));
    row.stages = s->num_stages();
    row.makespan = sim.makespan;
    row.bubble_ratio = sim.bubble_ratio;
    row.cap_violated = sim.memory_cap_violated;
    for (const RankSimResult& r : sim.ranks) row.peak_memory = std::max(row.peak_memory, r.peak_memory);
    rows.push_back(row);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.error.empty() != b.error.empty()) return a.error.empty();
    return a.makespan < b.makespan;
  });
  const bool bytes = !opts.schedule.activation_bytes.empty() || !opts.schedule.static_bytes.empty();
  if (opts.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const Row& r : rows) {
      nlohmann::json j{{"schedule", r.family}};
      if (!r.error.empty()) {
        j["error"] = r.error;
      } else {
        j.update({{"stages", r.stages}, {"makespan", r.makespan}, {"bubble_ratio", r.bubble_ratio},
                  {"peak_memory", r.peak_memory}, {"memory_cap_violated", r.cap_violated}});
      }
      out.push_back(j);
    }
    std::printf("%s\n", out.dump(2).c_str());
    return Status::Ok();
  }
  std::printf("%d ranks, %d microbatches; %s\n\n", opts.schedule.ranks, opts.schedule.microbatches,
              opts.per_stage_costs ? "costs per virtual stage"
                                   : "costs per rank's share of a microbatch (split over its chunks)");
  std::printf("  %-18s %7s %11s %8s  %s\n", "schedule", "stages", "makespan", "bubble",
              bytes ? "peak memory" : "peak activations (microbatches)");
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      std::printf("  %-18s  n/a: %s\n", r.family.c_str(), r.error.c_str());
      continue;
    }
    std::string mem = bytes ? FormatBytes(r.peak_memory) : std::to_string(r.peak_memory).substr(0, 5);
    std::printf("  %-18s %7d %11.3f %7.1f%%  %s%s\n", r.family.c_str(), r.stages, r.makespan, 100 * r.bubble_ratio,
                mem.c_str(), r.cap_violated ? "  (exceeds --memory-cap)" : "");
  }
  return Status::Ok();
}

}  // namespace

void AddScheduleCompareCommand(CLI::App& parent, CommandContext& ctx) {
  auto opts = std::make_shared<CompareOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "compare", "Simulate every built-in family for the same shape and costs, ranked by makespan");
  AddScheduleOptions(*cmd, opts->schedule);
  AddCostOptions(*cmd, opts->schedule);
  cmd->add_flag("--json", opts->json, "Print the table as JSON");
  cmd->add_flag("--per-stage-costs", opts->per_stage_costs,
                "Charge --cost per virtual stage (by default a family with v chunks per rank charges 1/v per chunk, "
                "so every family computes the same model)");
  cmd->callback([opts, &ctx] { ctx.run = [opts] { return RunCompare(*opts); }; });
}

}  // namespace pw::cli
