// `pipewright schedule sim`: simulates a schedule under a cost model and
// prints makespan, bubble ratio, per-rank busy time, peak memory and
// bubbles, as a table or (--json) one JSON object.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/schedule_options.h"
#include "sim/simulator.h"
#include "viz/sim_json.h"
#include "viz/summary.h"

namespace pw::cli {
namespace {

struct SimOptionsCli {
  ScheduleOptions schedule;
  bool json = false;
};

Status RunSim(const SimOptionsCli& opts) {
  PW_ASSIGN_OR_RETURN(dsl::ScheduleSource source, ToScheduleSource(opts.schedule));
  PW_ASSIGN_OR_RETURN(Schedule s, dsl::LoadSchedule(source));
  PW_ASSIGN_OR_RETURN(CostModel costs, BuildCostModel(opts.schedule, s));
  SimOptions sim_options;
  sim_options.record_spans = false;
  PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(s, costs, sim_options));
  if (opts.json) {
    std::printf("%s\n", SimResultToJson(s, sim, costs).dump().c_str());
  } else {
    std::printf("%s", RenderSimSummary(s, sim, costs).c_str());
  }
  return Status::Ok();
}

}  // namespace

void AddScheduleSimCommand(CLI::App& parent, CommandContext& ctx) {
  auto opts = std::make_shared<SimOptionsCli>();
  CLI::App* cmd = parent.add_subcommand(
      "sim", "Simulate a schedule: makespan, bubble ratio, per-rank busy time, peak memory and bubbles");
  AddScheduleOptions(*cmd, opts->schedule);
  AddCostOptions(*cmd, opts->schedule);
  cmd->add_flag("--json", opts->json,
                "Print one JSON object: makespan, bubble_ratio, ranks[{rank, busy, peak_memory, bubbles}]");
  cmd->callback([opts, &ctx] { ctx.run = [opts] { return RunSim(*opts); }; });
}

}  // namespace pw::cli
