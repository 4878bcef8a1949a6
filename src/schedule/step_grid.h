// RenderStepGrid: a schedule as a fixed-width text grid, one row per rank and
// one column per program step (position in the rank's program), each cell the
// action in PyTorch notation ("2F0"). The validator appends it to its errors
// with the offending cell marked, so a user sees the problem in context:
//
//     step   |   0    1    2    3    4    5
//     rank 0 |  0F0  0F1 >0B0<  0F2  0B1  0B2
//     rank 1 |  1F0  1B0  1F1  1B1  1F2  1B2
//
// Big schedules are cut to a window of steps and ranks around the marked cell
// ("…" stands for the elided side); a compact mode draws one character per
// cell (the kind) for schedules too wide to read action by action.
//
// Pure functions; safe to call concurrently. Cost: O(ranks + cells shown).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/ids.h"
#include "schedule/schedule.h"

namespace pw {

// One cell of the grid: position `step` of rank `rank`'s program.
struct GridCell {
  RankId rank = 0;
  size_t step = 0;

  friend bool operator==(const GridCell&, const GridCell&) = default;
};

struct StepGridOptions {
  // The cell to point at, drawn as >0B0< (compact mode: '^' beneath it); its
  // row is flagged with '>' and the window of steps and ranks is centred on
  // it. It may lie past the end of its rank's program (drawn as an empty
  // cell). A mark on a rank that does not exist is ignored.
  std::optional<GridCell> mark;
  // Further cells involved in the problem, drawn as [0F0] (compact: '+').
  // The window stretches to show them when they fit together with `mark`.
  std::vector<GridCell> related;
  // Without `mark`: the rank to centre the rows on and flag with '>' (e.g.
  // the rank whose program misses an action).
  std::optional<RankId> focus_rank;
  int max_columns = 32;  // steps shown at most; <= 0 shows every step
  int max_rows = 16;     // ranks shown at most; <= 0 shows every rank
  // One character per cell: F B I W, s/r send/receive, R REDUCE_GRAD, O OPT,
  // '.' idle, a lower-case letter or digit for user kinds (see the legend
  // line). Stage and microbatch are not shown.
  bool compact = false;
};

// Renders the grid; every line ends with '\n' and has no trailing spaces.
// Never fails: actions out of range or of unregistered kinds are drawn too
// (see ActionLabel), so broken schedules can be shown.
std::string RenderStepGrid(const Schedule& schedule, const StepGridOptions& options = {});

// Schedule::ActionName for registered kinds ("2F0", "" for IDLE); for a kind
// id the registry does not know, "<stage>?<kind id>[<microbatch>]" instead of
// failing, since the validator names such actions in its errors.
std::string ActionLabel(const Schedule& schedule, const Action& a);

}  // namespace pw
