// The `pipewright` binaries. Subcommands live one per file (cmd_*.cc); this
// file only wires them up and turns errors into messages and exit codes:
//   0 success, 1 the command failed (bad input file, invalid schedule, I/O),
//   2 bad command line (CLI11's own errors: unknown flag, missing value...).
//
// Built twice (src/cli/CMakeLists.txt): as `pipewright` (PW_FRONT_END), the
// planning commands without LibTorch, which hands every other command to
// `pipewright-runtime` beside it; and as `pipewright-runtime`, every command.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "cli/command.h"
#include "core/status_record.h"
#include "os/environment.h"
#include "os/process.h"
#ifdef PW_HAVE_RUNTIME
#include "model/fused_kernels.h"
#include "os/blas_core.h"
#endif

namespace {

#ifdef PW_FRONT_END
// The commands this binary runs itself: they never touch LibTorch.
bool IsPlanningCommand(int argc, char** argv) {
  if (argc < 2) return false;
  const std::string_view command = argv[1];
  return command == "schedule" || command == "plan" || command == "tokenize" || command == "--version";
}

// Replaces this process with pipewright-runtime from this binary's
// directory, with the same arguments. Returns (exit code) only when that
// binary is missing or cannot run.
int RunInTheRuntimeBinary(char** argv) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path runtime = (ec ? std::filesystem::path(argv[0]) : self).parent_path() / "pipewright-runtime";
  const int error = pw::ReplaceProcessImage(runtime.string(), argv);
  const std::string command = argv[1] != nullptr ? argv[1] : "--help";
  if (error == ENOENT) {
    std::fprintf(stderr,
                 "pipewright: '%s' needs %s, the binary with the LibTorch commands (train, infer, eval, side-task), "
                 "which this build does not have; install LibTorch with scripts/install-deps.sh and rebuild "
                 "with scripts/build.sh. The planning commands (schedule, plan) work without it.\n",
                 command.c_str(), runtime.c_str());
  } else {
    std::fprintf(stderr, "pipewright: cannot run %s for '%s': %s\n", runtime.c_str(), command.c_str(),
                 std::strerror(error));
  }
  return 2;
}
#endif

#ifdef PW_HAVE_RUNTIME
// The commands that multiply matrices restart once under OpenBLAS kernels
// for this CPU when OpenBLAS fell back to generic ones (os/blas_core.h); the
// ranks they start inherit the setting, so every process of a job runs the
// same kernels. OPENBLAS_CORETYPE set by the user is left alone.
void RestartWithFasterBlasKernels(int argc, char** argv) {
  if (argc < 2 || pw::EnvironmentVariable("OPENBLAS_CORETYPE")) return;
  const std::string_view command = argv[1];
  if (command != "train" && command != "infer" && command != "eval" && command != "side-task" &&
      command != "kernels") {
    return;
  }
  const std::string core = pw::BetterBlasCoreType(pw::LoadedBlasCoreName(), pw::CpuFlags());
  if (core.empty()) return;
  pw::SetEnvironmentVariable("OPENBLAS_CORETYPE", core);
  pw::ReplaceProcessImage("/proc/self/exe", argv);
  pw::UnsetEnvironmentVariable("OPENBLAS_CORETYPE");  // exec failed: go on with the kernels loaded
}
#endif

}  // namespace

int main(int argc, char** argv) {
  using namespace pw::cli;
#ifdef PW_FRONT_END
  if (!IsPlanningCommand(argc, argv)) return RunInTheRuntimeBinary(argv);
#endif
#ifdef PW_HAVE_RUNTIME
  RestartWithFasterBlasKernels(argc, argv);
  // pipewright's kernel level is chosen here, once (a bad PIPEWRIGHT_KERNELS
  // stops the process now, not in the middle of a job).
  (void)pw::ActiveKernelIsa();
#endif
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
  AddTokenizeCommand(app, ctx);
#ifdef PW_HAVE_RUNTIME
  AddTrainCommand(app, ctx);
  AddExportCommand(app, ctx);
#endif
#ifdef PW_HAVE_HARVEST
  AddSideTaskCommand(app, ctx);
#endif
#ifdef PW_HAVE_INFER
  AddInferCommand(app, ctx);
  AddEvalCommand(app, ctx);
  AddKernelsCommand(app, ctx);
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
    std::fflush(stderr);
    WriteStatusRecordIfAsked(status);
    return 1;
  }
  return 0;
}
