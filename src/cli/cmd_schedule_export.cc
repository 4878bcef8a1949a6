// `pipewright schedule export`: writes a schedule as pipewright text or as
// torch.distributed.pipelining's compute-only CSV, optionally after the
// lowering passes (communication, gradient sync, I+W merge).
#include <cstdio>

#include "cli/command.h"
#include "cli/schedule_options.h"
#include "schedule/csv_format.h"
#include "schedule/lowering.h"
#include "schedule/text_format.h"
#include "schedule/validator.h"
#include "os/atomic_file.h"

namespace pw::cli {
namespace {

struct ExportOptions {
  ScheduleOptions schedule;
  std::string format = "text";
  std::string out;
  bool merge_iw = false;
  bool insert_comm = false;
  bool grad_sync = false;
};

Status RunExport(const ExportOptions& opts) {
  PW_ASSIGN_OR_RETURN(dsl::ScheduleSource source, ToScheduleSource(opts.schedule));
  PW_ASSIGN_OR_RETURN(Schedule s, dsl::LoadSchedule(source));
  if (opts.merge_iw) s = MergeInputWeight(s);
  if (opts.insert_comm) {
    PW_ASSIGN_OR_RETURN(s, InsertCommunication(s));
  }
  if (opts.grad_sync) {
    PW_ASSIGN_OR_RETURN(s, AddGradientSync(s));
  }
  if (opts.merge_iw || opts.insert_comm || opts.grad_sync) {
    Status valid = ValidateSchedule(s);
    if (!valid.ok()) return valid.WithContext("internal: lowered schedule is invalid");
  }
  std::string text;
  if (opts.format == "csv") {
    PW_ASSIGN_OR_RETURN(text, FormatScheduleCsv(s));
  } else {
    text = FormatScheduleText(s);
  }
  if (opts.out.empty() || opts.out == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return Status::Ok();
  }
  PW_RETURN_IF_ERROR(WriteFile(opts.out, text, Durability::kAtomic));
  std::fprintf(stderr, "wrote %s (%s, %zu actions)\n", opts.out.c_str(), opts.format.c_str(), s.NumActions());
  return Status::Ok();
}

}  // namespace

void AddScheduleExportCommand(CLI::App& parent, CommandContext& ctx) {
  auto opts = std::make_shared<ExportOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "export", "Write a schedule as pipewright text or torch.distributed.pipelining CSV");
  AddScheduleOptions(*cmd, opts->schedule);
  // A .pipe program's order depends on the costs it is list-scheduled with
  // (plan's --out-costs gives the order plan evaluated).
  AddCostOptions(*cmd, opts->schedule);
  cmd->add_option("-f,--format", opts->format, "text (pipewright, exact) or csv (PyTorch compute-only)")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "csv"}));
  cmd->add_option("-o,--out", opts->out, "Output file (default: standard output)");
  cmd->add_flag("--merge-iw", opts->merge_iw, "Merge each I immediately followed by its W into one B");
  cmd->add_flag("--insert-comm", opts->insert_comm, "Insert paired SEND/RECV actions between ranks (text only)");
  cmd->add_flag("--grad-sync", opts->grad_sync, "Add REDUCE_GRAD after each stage's last backward and OPT (text only)");
  cmd->callback([opts, &ctx] { ctx.run = [opts] { return RunExport(*opts); }; });
}

}  // namespace pw::cli
