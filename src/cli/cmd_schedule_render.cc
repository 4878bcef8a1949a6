// `pipewright schedule render`: draws a simulated schedule as an SVG
// timeline and/or a Chrome/Perfetto trace (open in ui.perfetto.dev).
#include <cstdio>

#include "cli/command.h"
#include "cli/schedule_options.h"
#include "sim/simulator.h"
#include "os/atomic_file.h"
#include "viz/svg_timeline.h"
#include "viz/chrome_trace.h"

namespace pw::cli {
namespace {

struct RenderOptions {
  ScheduleOptions schedule;
  std::string svg;
  std::string trace;
};

Status RunRender(const RenderOptions& opts) {
  if (opts.svg.empty() && opts.trace.empty()) {
    return Status::InvalidArgument("nothing to render; give --svg FILE and/or --trace FILE");
  }
  PW_ASSIGN_OR_RETURN(dsl::ScheduleSource source, ToScheduleSource(opts.schedule));
  PW_ASSIGN_OR_RETURN(Schedule s, dsl::LoadSchedule(source));
  PW_ASSIGN_OR_RETURN(CostModel costs, BuildCostModel(opts.schedule, s));
  PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(s, costs));
  if (!opts.svg.empty()) {
    PW_RETURN_IF_ERROR(WriteFile(opts.svg, RenderTimelineSvg(s, sim, SvgOptions{}), Durability::kAtomic));
    std::printf("wrote %s (SVG timeline, makespan %g, bubble ratio %.1f%%)\n", opts.svg.c_str(), sim.makespan,
                100 * sim.bubble_ratio);
  }
  if (!opts.trace.empty()) {
    PW_RETURN_IF_ERROR(WriteFile(opts.trace, RenderChromeTrace(s, sim, TraceOptions{}), Durability::kAtomic));
    std::printf("wrote %s (Chrome/Perfetto trace: open in https://ui.perfetto.dev)\n", opts.trace.c_str());
  }
  return Status::Ok();
}

}  // namespace

void AddScheduleRenderCommand(CLI::App& parent, CommandContext& ctx) {
  auto opts = std::make_shared<RenderOptions>();
  CLI::App* cmd = parent.add_subcommand("render", "Draw a simulated schedule: SVG timeline, Perfetto trace");
  AddScheduleOptions(*cmd, opts->schedule);
  AddCostOptions(*cmd, opts->schedule);
  cmd->add_option("--svg", opts->svg, "Write an SVG timeline: one lane per rank, F/B/I/W coloured, bubbles shown");
  cmd->add_option("--trace", opts->trace, "Write a Chrome/Perfetto JSON trace");
  cmd->callback([opts, &ctx] { ctx.run = [opts] { return RunRender(*opts); }; });
}

}  // namespace pw::cli
