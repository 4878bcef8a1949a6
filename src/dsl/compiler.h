// Compiling a PipeProgram (dsl/pipe_program.h) into a Schedule.
//
// The compiler is an actor-style list scheduler over a cost model: every
// rank, whenever it is free, runs the highest-priority action that is ready
// (its dependencies have ended, by schedule/dependencies.h) and that its
// memory cap and warm-up count allow. Pinned sequences are emitted as given.
// The result is a plain Schedule: the validator, simulator and executor
// treat it like any other.
#pragma once

#include <string>

#include "core/status.h"
#include "dsl/pipe_program.h"
#include "schedule/schedule.h"
#include "sim/cost_model.h"

namespace pw::dsl {

struct CompileOptions {
  // Override the program's shape when > 0 (the CLI's --ranks/--microbatches).
  int ranks = 0;
  int microbatches = 0;
  // Costs the list scheduler uses to decide when a rank is free; need not be
  // resolved. Default: uniform F=1, B=2 (I=W=1).
  CostModel costs;
};

// Pure function of its inputs. Fails with the program's file:line:col when a
// construct is invalid for the shape (e.g. an explicit placement of the wrong
// length, an expression that fails to evaluate for some rank, a pinned action
// on the wrong rank), and with the reason when the program cannot finish: a
// deadlock of pinned sequences, or a memory cap too small for any order
// (e.g. "rank 2 may hold 0 microbatches, but a forward needs 1").
Result<Schedule> CompilePipeProgram(const PipeProgram& program, const CompileOptions& options = {});

}  // namespace pw::dsl
