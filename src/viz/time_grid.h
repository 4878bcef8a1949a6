// RenderTimeGrid: a terminal picture of a simulated schedule — one row per
// rank, one column per time quantum — printed by `pipewright schedule show`.
//
//   1f1b: p=2, m=2, makespan 9, bubble ratio 33.3%, 1 column = 1 time unit
//   rank 0 | F0 F1 .. .. B0--- .. B1--- |
//   rank 1 | .. F0 B0--- F1 B1--- .. .. |
//   time     0     2     4     6     8
//   legend: F=forward B=backward .=idle; digits = microbatch
//
// Each cell shows the kind letter and microbatch of the action running in
// it; an action longer than one column continues with '-'. When the labelled
// cells would be wider than the limit, each column shrinks to one character
// (the kind letter where an action starts, '-' where it continues); when even
// that is too wide, a column covers makespan / max_columns time and shows the
// action running at its middle, so actions shorter than a column may vanish.
// The picture is exact for uniform costs, where every action lasts a whole
// number of quanta.
#pragma once

#include <string>

#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace pw {

struct TimeGridOptions {
  // Terminal columns (characters) a row's cells may take, the "rank r |"
  // prefix not counted.
  int max_columns = 120;
  // Time per column; 0 picks the largest quantum that divides every
  // action's start and end (e.g. 1 for F=1,B=2; 0.5 for F=1.5,B=2).
  double quantum = 0;
  bool title = true;    // first line: name, p, m, makespan, bubble ratio, scale
  bool ruler = true;    // time labels under the rows
  bool legend = true;   // last line: the letters used
};

// Returns the picture, lines ending in '\n'. Zero-length actions (by default
// the communication kinds) do not show; a rank that owns several stages shows
// its 2nd, 4th, ... chunk in lower case. Pure; O(actions + ranks x columns).
// `result` must come from Simulate(schedule, ...) with record_spans
// (PW_CHECK otherwise); `options.max_columns` must be at least 1.
std::string RenderTimeGrid(const Schedule& schedule, const SimResult& result, const TimeGridOptions& options = {});

}  // namespace pw
