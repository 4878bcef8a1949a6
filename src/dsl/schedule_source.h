// LoadSchedule: a validated Schedule from what a user names — a built-in
// family (any spelling GenerateSchedule takes), a .pipe program (the
// schedule language), a torch.distributed.pipelining compute-only CSV, or
// pipewright text — with the shape (ranks, microbatches, chunks) the user
// asked for. Every front end loads schedules here: the CLI's `schedule ...`
// commands and `train`, and any program that links the planning half.
//
// Shape rules: a built-in family is generated for ranks x microbatches with
// `chunks` (0: the family's default). A .pipe program's own shape is a
// default that ranks / microbatches override when given. A CSV or text file
// fixes its shape: a given ranks or microbatches that contradicts it is an
// error, and so is given chunks (files carry their placement).
//
// Thread-safety: a pure function of its input and the files it reads; may
// be called concurrently.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "schedule/schedule.h"
#include "sim/cost_model.h"

namespace pw::dsl {

struct ScheduleSource {
  std::string schedule = "1f1b";  // family name, or a .pipe / .csv / pipewright text file
  int ranks = 1;
  int microbatches = 1;
  int chunks = 0;  // stages per rank of interleaved families; 0: the family's default
  // Whether the user set ranks / microbatches / chunks (instead of leaving
  // the defaults): only given values override or contradict a file.
  bool ranks_given = false;
  bool microbatches_given = false;
  bool chunks_given = false;
  // Costs the list scheduler of a .pipe program sees, the same the
  // simulator will charge; need not be resolved. Unused for other sources.
  CostModel pipe_costs;
  // Whether pipe_costs were given. If not, a program's `costs FILE` line
  // supplies them (the costs it was planned with), else the defaults.
  bool pipe_costs_given = false;
  // Set by a caller that built the given pipe_costs from the program's
  // `costs` line (as the CLI does, to lay its cost flags over them): errors
  // those costs cause then name the line, as when the loader reads it.
  bool pipe_costs_from_line = false;
  // Whether validation of a file's schedule ends with the deadlock dry run.
  // A caller that simulates the schedule next may skip it: the simulator
  // runs the same list scheduler and finds the same deadlock (then validate
  // with the dry run for the validator's message, as `schedule sim` does).
  bool dry_run = true;
};

// Generates the family or reads and compiles/parses the file, then
// validates a file's schedule (a family's is valid by construction, which
// schedule/generators_valid_test.cc checks, so it is not validated again).
// Blocks on file I/O. Errors name the schedule or file and say how to fix
// (the shape settings by the CLI's flags, --ranks, --microbatches,
// --chunks): NotFound for a name that is neither a family nor a file,
// InvalidArgument for a shape that contradicts a file, the
// parser's, compiler's or generator's error otherwise (a .pipe's `costs`
// line: the cost-model loader's error with the line in front, or the
// compiler's with a hint naming the line when its costs do not fit the
// shape), and the validator's with "schedule '<name>' is invalid" in front.
Result<Schedule> LoadSchedule(const ScheduleSource& source);

// A schedule and the model split that came with it.
struct LoadedSchedule {
  Schedule schedule;
  // A .pipe program's `layers` directive: model blocks per stage, one entry
  // per stage of `schedule`; empty when the source has none.
  std::vector<int> layers_per_stage;
  // Where the directive is, for messages: "best.pipe:5:1 'layers 1 2 1'".
  std::string layers_where;
  // The cost-model file a program's `costs` line named and the compiler
  // used (the path resolved against the program's directory); empty when
  // the costs were given or the program names none.
  std::string costs_path;
};

// The costs a .pipe program's `costs` line names (the path resolved against
// the program's directory); nullopt when the program has no such line.
// Parser errors as LoadSchedule's; a file that cannot be read or parsed is
// the cost-model loader's error with the line in front and the fix after.
// Blocks on file I/O.
Result<std::optional<CostModel>> LoadPipeCosts(const std::string& pipe_file);

// As LoadSchedule, and also returns the program's `layers` directive and
// the file its `costs` directive supplied. InvalidArgument (naming the file,
// line and directive) when `layers` lists a number of stages other than the
// schedule's; the cost-model loader's error, with the directive in front,
// when the `costs` file cannot be read or parsed.
Result<LoadedSchedule> LoadScheduleWithLayers(const ScheduleSource& source);

}  // namespace pw::dsl
