// How many steps of a side task one idle period holds under the gated
// policy's rule (docs/harvest.md): after k steps, step k + 1 starts only if
// the time left, period - k x step, exceeds margin x step
// (`train --harvest-step-margin`, 1.2 by default). So a period holds
// floor(period / step - (margin - 1)) steps; a margin below 1 counts as 1,
// so no step counts beyond its period. Shared by the planner's harvest
// score (search/harvest_score.h) and the runtime's task placement
// (harvest/manager.h), so that both count as the runtime runs.
//
// Pure; any unit, as long as period and step share it.
#pragma once

#include <algorithm>
#include <cmath>

namespace pw {

// Whole steps of length `step` (> 0) that start in an idle period of length
// `period`; 0 when none does. A hair of slack: a period of exactly
// margin - 1 + k steps holds k.
inline double StepsThatFit(double period, double step, double margin) {
  const double steps = period / step - (std::max(1.0, margin) - 1);
  return steps > 0 ? std::floor(steps + 1e-9) : 0.0;
}

}  // namespace pw
