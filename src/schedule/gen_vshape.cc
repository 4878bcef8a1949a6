// Schedules on the V-shape placement (rank r owns the "down" stage r and the
// "up" stage 2p-1-r, so the model goes down the ranks and back up): ZB-V
// (Qi et al., "Pipeline Parallelism with Controllable Memory", 2024) and
// DeepSeek's DualPipe-V. Both split the backward into I and W. The orders
// follow the published hand-crafted schedules (as in PyTorch's
// ScheduleZBVZeroBubble and ScheduleDualPipeV); see docs/schedules.md.
#include <algorithm>
#include <vector>

#include "schedule/gen_internal.h"
#include "schedule/generators.h"

namespace pw {

using gen_internal::CheckShape;
using gen_internal::ChunkRule;
using gen_internal::NewSchedule;
using gen_internal::Shape;

Result<Schedule> GenerateZbV(const GeneratorOptions& options) {
  PW_ASSIGN_OR_RETURN(Shape shape, CheckShape("zb-v", options, ChunkRule::kTwo, 2, 3));
  const auto [p, m, v] = shape;
  Schedule s = NewSchedule("zb-v", Placement::VShape(p).value(), m, 6 * static_cast<size_t>(m));
  // The hand-crafted order needs 2p-1 microbatches to fill the V; with fewer
  // we lay it out for n = 2p-1 and drop the microbatches that do not exist.
  // Dropping is safe: dependencies never cross microbatches, so the
  // remaining actions keep a valid order. Every phase below touches
  // microbatches that grow by one per iteration, so only its first few
  // iterations can emit anything; live() counts those and the counters then
  // jump ahead, which keeps the cost O(actions) rather than O(p * n).
  const int n = std::max(m, 2 * p - 1);
  auto live = [m](int iterations, int first_microbatch) {
    return std::clamp(m - first_microbatch, 0, iterations);
  };
  for (RankId r = 0; r < p; ++r) {
    Program& prog = s.programs[r];
    const StageId down = r, up = 2 * p - 1 - r;
    auto emit = [&](Action a) {
      if (a.microbatch < m) prog.push_back(a);
    };
    int f_down = 0, f_up = 0, i_down = 0, i_up = 0;
    // Warmup: forwards on the down stage until microbatch 0 has come back up
    // to this rank; then alternate up/down; then the up stage starts its
    // backwards, with W right after I while memory allows.
    const int warm_down = 2 * (p - r) - 1;
    for (int k = 0; k < live(warm_down, f_down); ++k) emit(Fwd(down, f_down + k));
    f_down += warm_down;
    for (int k = 0; k < live(r, f_up); ++k) {
      emit(Fwd(up, f_up + k));
      emit(Fwd(down, f_down + k));
    }
    f_up += r;
    f_down += r;
    for (int k = 0; k < live(p - r, i_up); ++k) {
      emit(Fwd(up, f_up + k));
      emit(BwdI(up, i_up + k));
      emit(BwdW(up, i_up + k));
    }
    f_up += p - r;
    i_up += p - r;
    // Steady state: F I W on the down stage, then on the up stage, for n-p
    // rounds, until the up stage's forwards reach n; the down stage runs out
    // of forwards p-1 rounds before the end.
    const int steady = n - p;
    for (int k = 0; k < live(steady, i_down); ++k) {
      if (f_down + k < n) emit(Fwd(down, f_down + k));
      emit(BwdI(down, i_down + k));
      emit(BwdW(down, i_down + k));
      emit(Fwd(up, f_up + k));
      emit(BwdI(up, i_up + k));
      emit(BwdW(up, i_up + k));
    }
    f_down = n;
    f_up += steady;
    i_down += steady;
    i_up += steady;
    // Cooldown: the I's come first (critical path); the W's they leave
    // behind fill the gaps of the tail.
    int w_down = i_down, w_up = i_up;
    for (int k = 0; k < live(r, i_down); ++k) {
      emit(BwdI(down, i_down + k));
      emit(BwdI(up, i_up + k));
    }
    i_down += r;
    i_up += r;
    for (int k = 0; k < live(p - r, w_down); ++k) {
      emit(BwdI(down, i_down + k));
      emit(BwdW(down, w_down + k));
    }
    i_down += p - r;
    w_down += p - r;
    for (; w_up < std::min(i_up, m); ++w_up) emit(BwdW(up, w_up));
    for (; w_down < std::min(i_down, m); ++w_down) emit(BwdW(down, w_down));
    PW_CHECK(f_up == n && i_down == n && i_up == n, "zb-v: unbalanced counts on rank " + std::to_string(r));
  }
  return s;
}

Result<Schedule> GenerateDualPipeV(const GeneratorOptions& options) {
  PW_ASSIGN_OR_RETURN(Shape shape, CheckShape("dualpipe-v", options, ChunkRule::kTwo, 2, 3));
  const auto [p, m, v] = shape;
  if (m < 2 * p) {
    return Status::FailedPrecondition("dualpipe-v needs at least twice as many microbatches as ranks (" +
                                      std::to_string(2 * p) + " for " + std::to_string(p) + " ranks), got " +
                                      std::to_string(m) + "; try --microbatches " + std::to_string(2 * p));
  }
  Schedule s = NewSchedule("dualpipe-v", Placement::VShape(p).value(), m, 6 * static_cast<size_t>(m));
  std::vector<Action> pending_w;  // FIFO of W's deferred by a split backward
  pending_w.reserve(2 * static_cast<size_t>(m));
  for (RankId r = 0; r < p; ++r) {
    Program& prog = s.programs[r];
    const StageId down = r, up = 2 * p - 1 - r;
    // Next microbatch of F and of the backward, per leg (0 = down, 1 = up).
    int next_f[2] = {0, 0}, next_b[2] = {0, 0};
    size_t w_head = 0;
    pending_w.clear();
    auto leg = [&](StageId st) { return st == down ? 0 : 1; };
    auto forward = [&](StageId st) { prog.push_back(Fwd(st, next_f[leg(st)]++)); };
    // A full backward. DualPipe-V runs it as one B (or overlapped with a
    // forward of the other leg); compute-only semantics write it as I then
    // W back to back, which costs the same and keeps the schedule F/I/W.
    auto full_backward = [&](StageId st) {
      const MicrobatchId mb = next_b[leg(st)]++;
      prog.push_back(BwdI(st, mb));
      prog.push_back(BwdW(st, mb));
    };
    auto split_backward = [&](StageId st) {
      const MicrobatchId mb = next_b[leg(st)]++;
      prog.push_back(BwdI(st, mb));
      pending_w.push_back(BwdW(st, mb));
    };
    auto backward = [&](StageId st, bool split) { split ? split_backward(st) : full_backward(st); };
    auto pop_w = [&] {
      if (w_head < pending_w.size()) prog.push_back(pending_w[w_head++]);
    };
    // 1-2. Warmup: down forwards, then down/up pairs.
    for (int k = 0; k < 2 * (p - r - 1); ++k) forward(down);
    for (int k = 0; k < r + 1; ++k) {
      forward(down);
      forward(up);
    }
    // 3. The up stage's first backwards, split so their W's can wait.
    for (int k = 0; k < p - r - 1; ++k) {
      split_backward(up);
      pop_w();
      forward(up);
    }
    // 4. Main phase: F(down) with B(up), then F(up) with B(down) — the pairs
    // DualPipe overlaps on two streams; here they run one after the other.
    for (int k = 0; k < m - 2 * p + r + 1; ++k) {
      forward(down);
      full_backward(up);
      forward(up);
      full_backward(down);
    }
    // 5. The down stage has no forwards left.
    for (int k = 0; k < p - r - 1; ++k) {
      full_backward(up);
      forward(up);
      full_backward(down);
    }
    // 6. Backwards of both legs; from the middle on they are split so the
    // W's can fill the tail (odd ranks switch one backward earlier).
    bool split = false;
    const int pairs = r + 1;
    for (int k = 0; k < pairs; ++k) {
      if (k == pairs / 2 && r % 2 == 1) split = true;
      backward(up, split);
      if (k == pairs / 2 && r % 2 == 0) split = true;
      backward(down, split);
    }
    // 7-8. Drain: W's interleaved with the last down backwards, then the rest.
    for (int k = 0; k < p - r - 1; ++k) {
      pop_w();
      backward(down, split);
    }
    while (w_head < pending_w.size()) pop_w();
    PW_CHECK(next_f[0] == m && next_f[1] == m && next_b[0] == m && next_b[1] == m,
             "dualpipe-v: unbalanced counts on rank " + std::to_string(r));
  }
  return s;
}

}  // namespace pw
