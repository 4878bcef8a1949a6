// The compute-only CSV of torch.distributed.pipelining, so that schedules
// move between pipewright and PyTorch (PipelineScheduleMulti._dump_csv and
// _load_csv(format="compute_only") in torch/distributed/pipelining/
// schedules.py). What PyTorch does, and so what this file does:
//
//   - no header; row r is rank r's program, one cell per step, each cell an
//     action in PyTorch notation ("2F0", "1B3", "0I1", "0W1");
//   - an empty cell is an idle step (PyTorch's None); rows are NOT padded
//     to equal length, so a row ends at its last step and a trailing idle
//     step leaves a trailing comma;
//   - rows end in "\r\n" (Python's csv.writer default); a row holding one
//     empty cell is written as `""` (csv.writer quotes it so that it differs
//     from an empty row), and an empty line is a rank with no steps;
//   - reading accepts "\r\n", "\n" or "\r", quoted cells, and blanks around
//     a cell (_Action.from_str strips them);
//   - the placement is not stored: it is inferred from which rank runs each
//     stage, and a stage on two ranks is an error (_validate_schedule).
// Stricter than PyTorch: a cell must be exactly one action ("2F0x" is an
// error, where PyTorch's regex ignores the "x").
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "schedule/schedule.h"

namespace pw {

struct CsvImportOptions {
  std::string name;           // the schedule's name; empty: source_name's file stem
  int num_microbatches = 0;   // 0: one more than the largest microbatch in the file
  // PyTorch up to 2.4 had no "I": it wrote backward-input as "B" next to
  // "W". When true, a B whose (stage, microbatch) also has a W reads as I.
  bool legacy_b_means_input = false;
};

struct CsvExportOptions {
  std::string line_terminator = "\r\n";  // Python csv.writer's; "\n" for Unix-style files
};

// The CSV of `schedule`: one row per rank, idle steps as empty cells.
// Fails with FailedPrecondition, naming rank and position, if any action is
// not F, B, I, W or idle (communication, REDUCE_GRAD, OPT, user kinds): the
// CSV cannot hold them. Use StripToCompute (schedule/lowering.h) first, or
// the text format, which holds every action. Pure.
Result<std::string> FormatScheduleCsv(const Schedule& schedule, const CsvExportOptions& options = {});

// Parses a compute-only CSV. `source_name` (a path, or "<stdin>") prefixes
// errors as "<source>:<line>:<col> (rank r, cell c): <what>; <hint>".
// Fails with InvalidArgument on a malformed cell, a non-compute action, a
// stage on two ranks, a stage missing from every row, a rank that runs no
// stage (a blank line is such a rank), or a microbatch beyond
// options.num_microbatches. Pure; never crashes on malformed input.
//
// Round trips: FormatScheduleCsv(ParseScheduleCsv(x)) == x byte for byte
// when x was written with the same line terminator; and for a compute-only
// schedule s whose every stage appears on its rank and whose every
// microbatch appears, ParseScheduleCsv(FormatScheduleCsv(s)) == s (idle
// steps read back as kIdleAction, schedule/action_text.h).
Result<Schedule> ParseScheduleCsv(std::string_view csv, std::string_view source_name,
                                  const CsvImportOptions& options = {});

}  // namespace pw
