// Interleaved 1F1B (Megatron) and looped BFS: v stages per rank on the
// Interleaved(p, v) placement, stage = chunk * p + rank. See docs/schedules.md.
#include <algorithm>
#include <vector>

#include "schedule/gen_internal.h"
#include "schedule/generators.h"

namespace pw {

using gen_internal::CheckShape;
using gen_internal::ChunkRule;
using gen_internal::NewSchedule;
using gen_internal::Shape;

Result<Schedule> GenerateInterleaved1F1B(const GeneratorOptions& options) {
  PW_ASSIGN_OR_RETURN(Shape shape, CheckShape("interleaved-1f1b", options, ChunkRule::kAtLeast1, 2, 2));
  // Plain variables, not a structured binding: the lambdas below capture
  // them, which clang 14 (the fuzz build) does not allow for bindings.
  const int p = shape.p, m = shape.m, v = shape.v;
  if (m % p != 0) {
    const int up = (m / p + 1) * p;
    return Status::FailedPrecondition(
        "interleaved-1f1b needs the number of microbatches (" + std::to_string(m) +
        ") to be a multiple of the number of ranks (" + std::to_string(p) + "); try --microbatches " +
        std::to_string(up) + " (or use looped-bfs, which has no such rule)");
  }
  const size_t per_rank = 2 * static_cast<size_t>(m) * v;
  Schedule s = NewSchedule("interleaved-1f1b", Placement::Interleaved(p, v).value(), m, per_rank);
  const int total = m * v;  // forwards (and backwards) per rank
  std::vector<MicrobatchId> next_fwd(v), next_bwd(v);
  for (RankId r = 0; r < p; ++r) {
    Program& prog = s.programs[r];
    std::fill(next_fwd.begin(), next_fwd.end(), 0);
    std::fill(next_bwd.begin(), next_bwd.end(), 0);
    // Microbatches go through the chunks in groups of p: forward op j runs
    // chunk (j / p) % v; backward op k runs the chunks in reverse order.
    auto forward = [&](int j) {
      const int chunk = (j / p) % v;
      prog.push_back(Fwd(chunk * p + r, next_fwd[chunk]++));
    };
    auto backward = [&](int k) {
      const int chunk = v - 1 - (k / p) % v;
      prog.push_back(Bwd(chunk * p + r, next_bwd[chunk]++));
    };
    // Megatron's warmup: the first backward of the last chunk reaches rank r
    // after (v-1)*p forwards of the earlier chunks plus two per hop (the
    // forward going down and the backward coming back).
    const int warmup = std::min((v - 1) * p + 2 * (p - 1 - r), total);
    for (int j = 0; j < warmup; ++j) forward(j);
    for (int k = 0; k < total - warmup; ++k) {
      forward(warmup + k);
      backward(k);
    }
    for (int k = total - warmup; k < total; ++k) backward(k);
  }
  return s;
}

Result<Schedule> GenerateLoopedBfs(const GeneratorOptions& options) {
  PW_ASSIGN_OR_RETURN(Shape shape, CheckShape("looped-bfs", options, ChunkRule::kAtLeast1, 2, 2));
  const auto [p, m, v] = shape;
  const size_t per_rank = 2 * static_cast<size_t>(m) * v;
  Schedule s = NewSchedule("looped-bfs", Placement::Interleaved(p, v).value(), m, per_rank);
  for (RankId r = 0; r < p; ++r) {
    Program& prog = s.programs[r];
    for (int chunk = 0; chunk < v; ++chunk) {
      for (MicrobatchId mb = 0; mb < m; ++mb) prog.push_back(Fwd(chunk * p + r, mb));
    }
    // Last in, first out (as PyTorch's ScheduleLoopedBFS): the last stage can
    // start the backward of the microbatch it has just finished.
    for (int chunk = v - 1; chunk >= 0; --chunk) {
      for (MicrobatchId mb = m - 1; mb >= 0; --mb) prog.push_back(Bwd(chunk * p + r, mb));
    }
  }
  return s;
}

}  // namespace pw
