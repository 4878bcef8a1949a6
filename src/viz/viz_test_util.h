// Hand-built schedules for the viz tests, so they do not depend on the
// generators (schedule/generators.h). Test-only; header-only so that the
// library glob does not pick it up.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "schedule/schedule.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"

namespace pw::testing_viz {

// 1F1B on a sequential placement: rank r runs min(p-r-1, m) warm-up
// forwards, then forward/backward pairs, then the backwards left. With
// `split`, each B becomes I immediately followed by W.
inline Schedule OneFOneB(int p, int m, bool split = false, std::string name = "1f1b") {
  Schedule s = MakeEmptySchedule(std::move(name), *Placement::Sequential(p), m);
  for (int r = 0; r < p; ++r) {
    Program& prog = s.programs[r];
    auto backward = [&](int mb) {
      if (split) {
        prog.push_back(BwdI(r, mb));
        prog.push_back(BwdW(r, mb));
      } else {
        prog.push_back(Bwd(r, mb));
      }
    };
    const int warmup = std::min(p - r - 1, m);
    for (int mb = 0; mb < warmup; ++mb) prog.push_back(Fwd(r, mb));
    for (int i = 0; i < m - warmup; ++i) {
      prog.push_back(Fwd(r, warmup + i));
      backward(i);
    }
    for (int mb = m - warmup; mb < m; ++mb) backward(mb);
  }
  return s;
}

// GPipe order on a V-shape placement with p ranks (2p stages; rank r owns
// stages r and 2p-1-r): each rank runs all forwards of its first chunk,
// then of its second, then the backwards in reverse stage order.
inline Schedule VShapeGPipe(int p, int m) {
  Schedule s = MakeEmptySchedule("v-gpipe", *Placement::VShape(p), m);
  for (int r = 0; r < p; ++r) {
    const StageId first = r, second = 2 * p - 1 - r;
    Program& prog = s.programs[r];
    for (StageId st : {first, second}) {
      for (int mb = 0; mb < m; ++mb) prog.push_back(Fwd(st, mb));
    }
    for (StageId st : {second, first}) {
      for (int mb = 0; mb < m; ++mb) prog.push_back(Bwd(st, mb));
    }
  }
  return s;
}

// Simulates with uniform costs `spec` (e.g. "F=1,B=2"); fails the test on error.
inline SimResult SimulateOrDie(const Schedule& s, CostModel costs, std::string_view spec = "F=1,B=2") {
  EXPECT_TRUE(costs.ParseUniformCosts(spec).ok());
  Status resolved = costs.Resolve(s);
  EXPECT_TRUE(resolved.ok()) << resolved.ToString();
  Result<SimResult> r = Simulate(s, costs);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : SimResult{};
}

inline SimResult SimulateOrDie(const Schedule& s, std::string_view spec = "F=1,B=2") {
  return SimulateOrDie(s, CostModel{}, spec);
}

// Number of non-overlapping occurrences of `needle` in `hay`.
inline size_t Count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + needle.size())) ++n;
  return n;
}

}  // namespace pw::testing_viz
