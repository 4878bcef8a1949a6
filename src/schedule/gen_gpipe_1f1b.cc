// GPipe and 1F1B: the two single-stage-per-rank schedules with a full
// backward (B). See docs/schedules.md.
#include <algorithm>

#include "schedule/gen_internal.h"
#include "schedule/generators.h"

namespace pw {

using gen_internal::CheckShape;
using gen_internal::ChunkRule;
using gen_internal::NewSchedule;
using gen_internal::Shape;

Result<Schedule> GenerateGPipe(const GeneratorOptions& options) {
  PW_ASSIGN_OR_RETURN(Shape shape, CheckShape("gpipe", options, ChunkRule::kOne, 1, 2));
  const auto [p, m, v] = shape;
  Schedule s = NewSchedule("gpipe", Placement::Sequential(p).value(), m, 2 * static_cast<size_t>(m));
  for (RankId r = 0; r < p; ++r) {
    Program& prog = s.programs[r];
    for (MicrobatchId mb = 0; mb < m; ++mb) prog.push_back(Fwd(r, mb));
    // Backwards in the order the forwards ran, as PyTorch's ScheduleGPipe does.
    for (MicrobatchId mb = 0; mb < m; ++mb) prog.push_back(Bwd(r, mb));
  }
  return s;
}

Result<Schedule> Generate1F1B(const GeneratorOptions& options) {
  PW_ASSIGN_OR_RETURN(Shape shape, CheckShape("1f1b", options, ChunkRule::kOne, 1, 2));
  const auto [p, m, v] = shape;
  Schedule s = NewSchedule("1f1b", Placement::Sequential(p).value(), m, 2 * static_cast<size_t>(m));
  for (RankId r = 0; r < p; ++r) {
    Program& prog = s.programs[r];
    // Rank r's first backward can start only after the forward of microbatch
    // 0 has reached the last stage and come back: p-r-1 more forwards fit
    // before it, and keeping exactly that many in flight bounds memory.
    const int warmup = std::min(p - r - 1, m);
    for (MicrobatchId mb = 0; mb < warmup; ++mb) prog.push_back(Fwd(r, mb));
    for (MicrobatchId k = 0; k < m - warmup; ++k) {
      prog.push_back(Fwd(r, warmup + k));
      prog.push_back(Bwd(r, k));
    }
    for (MicrobatchId k = m - warmup; k < m; ++k) prog.push_back(Bwd(r, k));
  }
  return s;
}

}  // namespace pw
