// Hand-built schedules shared by the schedule layer's tests. They are written
// out by hand (not by the generators) so the tests of the validator, the
// grid and the dry run do not depend on the code that generates schedules.
#pragma once

#include <algorithm>

#include "schedule/schedule.h"

namespace pw::testing_util {

// 1F1B by hand: rank r warms up with p-1-r forwards, then alternates.
inline Schedule HandOneFOneB(int p, int m) {
  Schedule s = MakeEmptySchedule("1f1b", *Placement::Sequential(p), m);
  for (int r = 0; r < p; ++r) {
    int f = 0, b = 0;
    for (; f < std::min(p - 1 - r, m); ++f) s.programs[r].push_back(Fwd(r, f));
    while (f < m) {
      s.programs[r].push_back(Fwd(r, f++));
      s.programs[r].push_back(Bwd(r, b++));
    }
    while (b < m) s.programs[r].push_back(Bwd(r, b++));
  }
  return s;
}

}  // namespace pw::testing_util
