// `pipewright schedule show`: validates a schedule and prints its timeline
// as a text grid (time runs left to right, one row per rank) with metrics.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/schedule_options.h"
#include "sim/simulator.h"
#include "viz/sim_json.h"
#include "viz/summary.h"
#include "viz/time_grid.h"

namespace pw::cli {
namespace {

struct ShowOptions {
  ScheduleOptions schedule;
  bool json = false;
  int width = 120;
};

Status RunShow(const ShowOptions& opts) {
  PW_ASSIGN_OR_RETURN(dsl::ScheduleSource source, ToScheduleSource(opts.schedule));
  PW_ASSIGN_OR_RETURN(Schedule s, dsl::LoadSchedule(source));
  PW_ASSIGN_OR_RETURN(CostModel costs, BuildCostModel(opts.schedule, s));
  PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(s, costs));
  if (opts.json) {
    std::printf("%s\n", SimResultToJson(s, sim, costs).dump(2).c_str());
    return Status::Ok();
  }
  std::printf("schedule %s: %d ranks, %d stages (%s), %d microbatches, %zu actions — valid\n\n", s.name.c_str(),
              s.num_ranks(), s.num_stages(), s.placement.Describe().c_str(), s.num_microbatches, s.NumActions());
  TimeGridOptions grid;
  grid.max_columns = opts.width;
  std::printf("%s\n", RenderTimeGrid(s, sim, grid).c_str());
  std::printf("%s", RenderSimSummary(s, sim, costs).c_str());
  return Status::Ok();
}

}  // namespace

void AddScheduleShowCommand(CLI::App& parent, CommandContext& ctx) {
  auto opts = std::make_shared<ShowOptions>();
  CLI::App* cmd = parent.add_subcommand("show", "Validate a schedule and print its timeline grid and metrics");
  AddScheduleOptions(*cmd, opts->schedule);
  AddCostOptions(*cmd, opts->schedule);
  cmd->add_flag("--json", opts->json, "Print the simulation result as JSON instead");
  cmd->add_option("--width", opts->width, "Maximum grid columns")->capture_default_str()->check(CLI::Range(20, 10000));
  cmd->callback([opts, &ctx] { ctx.run = [opts] { return RunShow(*opts); }; });
}

}  // namespace pw::cli
