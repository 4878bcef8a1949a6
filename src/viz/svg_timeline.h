// RenderTimelineSvg: a standalone SVG picture of a simulated schedule, meant
// to be read at a glance.
//
//   title    name, p, m, makespan, bubble ratio (and a memory-cap warning)
//   lanes    one per rank ("rank r" on the left, idle share on the right);
//            each action a box at its simulated [start, end): F blue,
//            B bluish green, I orange, W reddish purple (Okabe-Ito, safe for
//            colour-blind readers), user kinds greys, communication thin grey
//            marks (zero-length ones omitted); a rank's 2nd, 3rd, ... chunk
//            is drawn in lighter shades; boxes show the microbatch number
//            when wide enough; idle time (bubbles) is hatched light red
//   axis     time ticks at round values under the lanes
//   legend   the kinds present, chunk shading, bubble
//
// Every box and bubble carries a <title> tooltip ("rank 1 2F0 3..5"). The
// width grows with the makespan up to SvgOptions::max_width. Above
// SvgOptions::detail_limit actions the lanes are drawn at pixel resolution
// (each pixel column takes the kind that covers most of it) without labels
// or tooltips, so the file stays small and renders quickly.
#pragma once

#include <cstddef>
#include <string>

#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace pw {

struct SvgOptions {
  std::string title;               // replaces the schedule name in the title when set
  double px_per_time_unit = 48;    // horizontal scale before the width caps apply
  int min_width = 720;             // whole picture, px: room for title and legend
  int max_width = 1600;            // whole picture, px
  int lane_height = 28;            // px per rank; shrinks (to 4) past max_lanes_height
  int max_lanes_height = 2400;     // px for all lanes together
  size_t detail_limit = 20000;     // more actions than this: pixel-resolution lanes
  bool labels = true;              // microbatch numbers in boxes that are wide enough
  bool tooltips = true;            // <title> per box and bubble
  bool bubbles = true;             // hatch idle time
};

// Returns the SVG document (UTF-8, starts with "<svg", xmlns set, text
// escaped). Pure; O(actions + ranks x width). `result` must come from
// Simulate(schedule, ...) with record_spans (PW_CHECK otherwise); options
// must be positive where they are sizes (PW_CHECK).
std::string RenderTimelineSvg(const Schedule& schedule, const SimResult& result, const SvgOptions& options = {});

}  // namespace pw
