// The `pipewright` binary. Subcommands live one per file (cmd_*.cc); this
// file only wires them up and turns errors into messages and exit codes:
//   0 success, 1 the command failed (bad input file, invalid schedule, I/O),
//   2 bad command line (CLI11's own errors: unknown flag, missing value...).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "cli/command.h"
#include "os/blas_core.h"

namespace {

// The commands that multiply matrices restart once under OpenBLAS kernels
// for this CPU when OpenBLAS fell back to generic ones (os/blas_core.h); the
// ranks they start inherit the setting, so every process of a job runs the
// same kernels. OPENBLAS_CORETYPE set by the user is left alone.
void RestartWithFasterBlasKernels(int argc, char** argv) {
  if (argc < 2 || std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  const std::string_view command = argv[1];
  if (command != "train" && command != "infer" && command != "side-task") return;
  const std::string core = pw::BetterBlasCoreType(pw::LoadedBlasCoreName(), pw::CpuFlags());
  if (core.empty()) return;
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE");  // exec failed: go on with the kernels loaded
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pw::cli;
  RestartWithFasterBlasKernels(argc, argv);
  CLI::App app{
      "pipewright: programmable pipeline parallelism.\n"
      "Schedules are programs: generate, import, validate, simulate and draw them."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "pipewright 0.1");

  CommandContext ctx;
  CLI::App* schedule = app.add_subcommand(
      "schedule", "Pipeline schedules: show, simulate, export, draw and compare them");
  schedule->require_subcommand(1);
  AddScheduleShowCommand(*schedule, ctx);
  AddScheduleSimCommand(*schedule, ctx);
  AddScheduleExportCommand(*schedule, ctx);
  AddScheduleRenderCommand(*schedule, ctx);
  AddScheduleCompareCommand(*schedule, ctx);
  AddPlanCommand(app, ctx);
#ifdef PW_HAVE_RUNTIME
  AddTrainCommand(app, ctx);
#endif
#ifdef PW_HAVE_HARVEST
  AddSideTaskCommand(app, ctx);
#endif
#ifdef PW_HAVE_INFER
  AddInferCommand(app, ctx);
#endif

  // CLI11 would report a mistyped command as "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-' && app.get_subcommands([&](CLI::App* sub) {
        return sub->get_name() == argv[1];
      }).empty()) {
    std::fprintf(stderr, "pipewright: unknown command '%s'; see pipewright --help for the commands\n", argv[1]);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Prints help (exit 0) or the usage error (exit 2).
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!ctx.run) {
    std::fprintf(stderr, "pipewright: no command chosen; see pipewright --help\n");
    return 2;
  }
  pw::Status status = ctx.run();
  if (!status.ok()) {
    std::fprintf(stderr, "pipewright: error: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
