// The validator: checks that a schedule can run before anything runs it.
//
// Checks, in this order (a report lists problems in this order, so the first
// problem is the most basic one):
//   1. structure   one program per rank, at least one microbatch and stage
//   2. ranges      every action's stage, microbatch and kind exist
//   3. placement   every action runs on the rank that owns its stage
//   4. coverage    every (stage, mb) runs F once and its backward once: B, or
//                  I and W (never B together with I/W); no duplicates
//   5. stage ops   REDUCE_GRAD / OPT at most once per stage, after every
//                  weight-gradient action of the stage (and OPT after REDUCE_GRAD)
//   6. comm        SEND_F(s,mb) pairs with RECV_F(s+1,mb), SEND_B(s,mb) with
//                  RECV_B(s-1,mb), once each, only across ranks; a receive
//                  comes before the compute that consumes it
//   7. user kinds  the kinds in a user kind's `after` rule exist for its (s,mb)
//   8. order       no action precedes a same-rank action it depends on
//                  (schedule/dependencies.h), e.g. 0B0 before 0F0
//   9. deadlock    a dry run (schedule/dry_run.h: the dependency rule of
//                  ListSchedule, without time) finishes; run only when checks
//                  1-8 pass, since they explain a hang better
//
// Each problem names rank, step and action, says what is wrong and how to fix
// it; as a Status it is followed by the step grid (schedule/step_grid.h) with
// the offending cell marked.
//
// Every function here is pure, blocks until done, and may be called
// concurrently. Cost: O(actions) time (two passes plus the dry run) and
// O(stages x microbatches) bytes, no per-action maps: a p = 1024, m = 8192
// 1F1B schedule (16.7 M actions) validates in about half a second.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "schedule/schedule.h"
#include "schedule/step_grid.h"

namespace pw {

// The checks, in the order they run and report.
enum class ProblemKind : uint8_t {
  kStructure = 0,
  kRange,
  kPlacement,
  kCoverage,
  kStageAction,
  kCommunication,
  kUserKind,
  kOrder,
  kDeadlock,
};
inline constexpr int kNumProblemKinds = static_cast<int>(ProblemKind::kDeadlock) + 1;

struct ValidationProblem {
  ProblemKind kind = ProblemKind::kStructure;
  StatusCode code = StatusCode::kInvalidArgument;
  // The offending action, when there is one (a missing action has none).
  std::optional<GridCell> cell;
  // The rank the problem concerns: cell->rank, or e.g. the owner of a
  // missing action's stage.
  std::optional<RankId> rank;
  // Other actions involved: the one an impossible order needs, the other
  // ranks' stuck actions of a deadlock.
  std::vector<GridCell> related;
  // What is wrong, where, and how to fix it; may hold several lines. No grid.
  std::string message;
};

struct ValidationReport {
  // Problems in check order (ProblemKind), within a check in program order
  // (rank, then step); at most ValidateOptions::max_problems of them.
  std::vector<ValidationProblem> problems;
  // Every problem found, including those not kept.
  size_t num_problems = 0;
  // True when the deadlock dry run ran (it is skipped after other problems).
  bool dry_run_done = false;

  bool ok() const { return num_problems == 0; }
};

struct ValidateOptions {
  // False accepts forward-only schedules (no B/I/W); split backward must
  // still be whole (I with W) and never mixed with B.
  bool require_backward = true;
  // Run the deadlock dry run when the static checks pass.
  bool dry_run = true;
  // Problems kept in a report; further ones are only counted.
  size_t max_problems = 64;
  // Shape of the grid in Status messages; `mark`, `related` and
  // `focus_rank` are set per problem.
  StepGridOptions grid = {.max_columns = 24};
};

// Runs every check and returns all problems (up to max_problems). Blocks;
// pure function of its inputs, safe to call concurrently.
ValidationReport CheckSchedule(const Schedule& schedule, const ValidateOptions& options = {});

// OK, or the first problem of CheckSchedule as a Status: its message, the
// grid with its cell marked, and how many more problems there are.
// Codes: InvalidArgument (structure, range), FailedPrecondition (a rule is
// broken), Deadlock (the dry run cannot finish).
Status ValidateSchedule(const Schedule& schedule, const ValidateOptions& options = {});

// One problem as a Status: message, then the grid marking problem.cell (or
// centred on problem.rank when it has no cell).
Status ProblemStatus(const Schedule& schedule, const ValidationProblem& problem,
                     const StepGridOptions& grid = {});

}  // namespace pw
