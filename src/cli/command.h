// How subcommands plug into the `pipewright` binary: each subcommand file
// defines one Add*Command function that registers its options on a parent
// CLI11 app and sets `run`, which main calls after parsing succeeds.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "core/status.h"

namespace pw::cli {

struct CommandContext {
  // The action of the subcommand the user chose; empty until parsing picks one.
  std::function<Status()> run;
};

void AddScheduleShowCommand(CLI::App& schedule_cmd, CommandContext& ctx);
void AddScheduleSimCommand(CLI::App& schedule_cmd, CommandContext& ctx);
void AddScheduleExportCommand(CLI::App& schedule_cmd, CommandContext& ctx);
void AddScheduleRenderCommand(CLI::App& schedule_cmd, CommandContext& ctx);
void AddScheduleCompareCommand(CLI::App& schedule_cmd, CommandContext& ctx);
// `pipewright plan`, a top-level command (cmd_plan.cc).
void AddPlanCommand(CLI::App& app, CommandContext& ctx);
// `pipewright tokenize`, a planning-side command (cmd_tokenize.cc).
void AddTokenizeCommand(CLI::App& app, CommandContext& ctx);
// Only in builds with the LibTorch runtime (PW_HAVE_RUNTIME).
void AddTrainCommand(CLI::App& app, CommandContext& ctx);
// Only with the runtime: `pipewright export` (cmd_export.cc).
void AddExportCommand(CLI::App& app, CommandContext& ctx);
// Only with harvest/ (PW_HAVE_HARVEST): `pipewright side-task run|list`,
// built-in side tasks alone (dedicated throughput), and the hidden
// side-task host process that a training rank starts (cmd_side_task.cc).
void AddSideTaskCommand(CLI::App& app, CommandContext& ctx);
// Only with infer/ (PW_HAVE_INFER): `pipewright infer` (cmd_infer.cc).
void AddInferCommand(CLI::App& app, CommandContext& ctx);
// Only with infer/: `pipewright eval` (cmd_eval.cc).
void AddEvalCommand(CLI::App& app, CommandContext& ctx);
// Only with infer/: `pipewright kernels`, this machine's kernel facts (cmd_kernels.cc).
void AddKernelsCommand(CLI::App& app, CommandContext& ctx);

}  // namespace pw::cli
