// Zero-bubble schedules on the sequential placement (Qi et al., "Zero Bubble
// Pipeline Parallelism", 2023): the backward is split into I (input
// gradient, on the critical path) and W (weight gradient, free to move).
//   zb-h1  1F1B's order with W's delayed to fill the tail (explicit formula,
//          as PyTorch's _get_1f1b_rank_ops with zero bubble and one stage).
//   zb-h2  more warmup forwards and W's deferred to the tail; built by a
//          list scheduler under unit costs (below). See docs/schedules.md.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "schedule/gen_internal.h"
#include "schedule/generators.h"

namespace pw {

using gen_internal::CheckShape;
using gen_internal::ChunkRule;
using gen_internal::NewSchedule;
using gen_internal::Shape;

Result<Schedule> GenerateZbH1(const GeneratorOptions& options) {
  PW_ASSIGN_OR_RETURN(Shape shape, CheckShape("zb-h1", options, ChunkRule::kOne, 1, 3));
  const auto [p, m, v] = shape;
  Schedule s = NewSchedule("zb-h1", Placement::Sequential(p).value(), m, 3 * static_cast<size_t>(m));
  for (RankId r = 0; r < p; ++r) {
    Program& prog = s.programs[r];
    const int warmup = std::min(p - r - 1, m);
    MicrobatchId next_w = 0;
    // Rank r starts its W's r ops after its first I: every rank then has p
    // microbatches in flight until W (1F1B's peak on rank 0), and the W's
    // that later ranks postponed fill the bubbles of the cooldown.
    auto maybe_w = [&](int op) {
      if (op >= r) prog.push_back(BwdW(r, next_w++));
    };
    for (MicrobatchId mb = 0; mb < warmup; ++mb) prog.push_back(Fwd(r, mb));
    for (int k = 0; k < m - warmup; ++k) {
      prog.push_back(Fwd(r, warmup + k));
      prog.push_back(BwdI(r, k));
      maybe_w(k);
    }
    for (int k = m - warmup; k < m; ++k) {
      prog.push_back(BwdI(r, k));
      maybe_w(k);
    }
    while (next_w < m) prog.push_back(BwdW(r, next_w++));
  }
  return s;
}

namespace {

// Per-rank state of the unit-cost list scheduler behind zb-h2.
struct RankState {
  MicrobatchId nf = 0, ni = 0, nw = 0;  // next F, I, W microbatch
  // Counters as they were when the current round began, valid when
  // updated_in == the current round; other ranks read these so that a
  // decision sees only actions that ended by the start of the round.
  MicrobatchId nf_before = 0, ni_before = 0;
  int64_t updated_in = -1;
  int64_t queued_for = -1;  // the last round this rank was put on the active list
};

// Builds zb-h2 by list scheduling with every action taking one time unit:
// each round, every free rank starts its highest-priority ready action —
// I (it is on the critical path), else F while fewer than `cap` microbatches
// are in flight (forward done, W not done yet), else the oldest pending W.
// Only ranks that acted or whose neighbour acted are revisited, so the cost
// is O(actions), not O(ranks x makespan).
void ListScheduleZbH2(int p, int m, int cap, Schedule& s) {
  std::vector<RankState> st(p);
  std::vector<RankId> active, next;
  active.reserve(p);
  next.reserve(p);
  for (RankId r = 0; r < p; ++r) active.push_back(r);
  const int64_t total = 3 * static_cast<int64_t>(p) * m;
  int64_t done = 0;
  for (int64_t round = 0; done < total; ++round) {
    PW_CHECK(!active.empty(), "zb-h2 list scheduler stalled");
    next.clear();
    auto wake = [&](RankId r) {
      if (r >= 0 && r < p && st[r].queued_for != round + 1) {
        st[r].queued_for = round + 1;
        next.push_back(r);
      }
    };
    auto nf_at_start = [&](RankId r) { return st[r].updated_in == round ? st[r].nf_before : st[r].nf; };
    auto ni_at_start = [&](RankId r) { return st[r].updated_in == round ? st[r].ni_before : st[r].ni; };
    for (RankId r : active) {
      RankState& me = st[r];
      // Each rank is visited at most once per round, so its own counters are
      // still those of the round's start here.
      const bool i_ready = me.ni < me.nf && (r == p - 1 || me.ni < ni_at_start(r + 1));
      const bool f_ready = me.nf < m && (r == 0 || me.nf < nf_at_start(r - 1)) && me.nf - me.nw < cap;
      const bool w_ready = me.nw < me.ni;
      if (!i_ready && !f_ready && !w_ready) continue;  // a neighbour will wake it
      me.nf_before = me.nf;
      me.ni_before = me.ni;
      me.updated_in = round;
      Program& prog = s.programs[r];
      if (i_ready) {
        prog.push_back(BwdI(r, me.ni++));
        wake(r - 1);
      } else if (f_ready) {
        prog.push_back(Fwd(r, me.nf++));
        wake(r + 1);
      } else {
        prog.push_back(BwdW(r, me.nw++));
      }
      wake(r);
      ++done;
    }
    active.swap(next);
  }
}

}  // namespace

Result<Schedule> GenerateZbH2(const GeneratorOptions& options) {
  PW_ASSIGN_OR_RETURN(Shape shape, CheckShape("zb-h2", options, ChunkRule::kOne, 1, 3));
  const auto [p, m, v] = shape;
  Schedule s = NewSchedule("zb-h2", Placement::Sequential(p).value(), m, 3 * static_cast<size_t>(m));
  // 2p-1 in flight lets rank r run 2(p-1-r)+1 warmup forwards, exactly the
  // time until its first I can arrive, so no rank waits inside its window.
  ListScheduleZbH2(p, m, 2 * p - 1, s);
  return s;
}

}  // namespace pw
