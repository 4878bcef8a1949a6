// `pipewright schedule sim`: simulates a schedule under a cost model and
// prints makespan, bubble ratio, per-rank busy time, peak memory and
// bubbles, as a table or (--json) one JSON object; with --as-trained, of
// the program `train` runs for it (communication, gradient sync, OPT).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/schedule_options.h"
#include "schedule/lowering.h"
#include "schedule/validator.h"
#include "sim/simulator.h"
#include "viz/sim_json.h"
#include "viz/summary.h"

namespace pw::cli {
namespace {

struct SimOptionsCli {
  ScheduleOptions schedule;
  bool json = false;
  bool as_trained = false;
};

Status RunSim(const SimOptionsCli& opts) {
  PW_ASSIGN_OR_RETURN(dsl::ScheduleSource source, ToScheduleSource(opts.schedule));
  // The simulation below is the deadlock check: a second list-scheduler run
  // in the validator would double the time of large schedules.
  source.dry_run = false;
  PW_ASSIGN_OR_RETURN(Schedule s, dsl::LoadSchedule(source));
  if (opts.as_trained) {
    Result<Schedule> lowered = LowerForTraining(s);
    if (!lowered.ok()) return lowered.status().WithContext("--as-trained");
    s = std::move(*lowered);
  }
  PW_ASSIGN_OR_RETURN(CostModel costs, BuildCostModel(opts.schedule, s));
  SimOptions sim_options;
  sim_options.record_spans = false;
  Result<SimResult> simulated = Simulate(s, costs, sim_options);
  if (simulated.status().code() == StatusCode::kDeadlock) {
    // The validator's message: the wait-for cycle on the grid.
    PW_RETURN_IF_ERROR(ValidateSchedule(s).WithContext("schedule '" + source.schedule + "' is invalid"));
  }
  PW_ASSIGN_OR_RETURN(SimResult sim, std::move(simulated));
  if (opts.json) {
    PW_RETURN_IF_ERROR(WriteSimResultJson(stdout, s, sim, costs));
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
  cmd->add_flag("--as-trained", opts->as_trained,
                "Simulate the program `train` runs for the schedule: sends and receives between ranks, the "
                "gradient sync and the optimizer step added, priced by the cost model's SEND_*, RECV_*, "
                "REDUCE_GRAD and OPT (a `train --profile-out` profile carries them); the makespan is then the "
                "predicted training step");
  cmd->callback([opts, &ctx] { ctx.run = [opts] { return RunSim(*opts); }; });
}

}  // namespace pw::cli
