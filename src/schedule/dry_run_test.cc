#include "schedule/dry_run.h"

#include <gtest/gtest.h>

#include "schedule/schedule_test_util.h"

#include <random>

#include "schedule/list_scheduler.h"

namespace pw {
namespace {

Schedule OneFOneB(int p, int m) { return testing_util::HandOneFOneB(p, m); }

// Interleaved (p ranks, 2 chunks), split backward, stage ops, a user kind.
Schedule InterleavedSplit(int p, int m) {
  Schedule s = MakeEmptySchedule("x", *Placement::Interleaved(p, 2), m);
  KindInfo offload;
  offload.name = "OFFLOAD";
  offload.after = {ActionKind::kForward};
  offload.before = {ActionKind::kBackwardInput};
  const ActionKind off = *s.kinds.Register(offload);
  const int stages = 2 * p;
  for (int mb = 0; mb < m; ++mb) {
    for (int st = 0; st < stages; ++st) {
      s.programs[st % p].push_back(Fwd(st, mb));
      s.programs[st % p].push_back({st, mb, off});
    }
    for (int st = stages - 1; st >= 0; --st) s.programs[st % p].push_back(BwdI(st, mb));
  }
  for (int st = 0; st < stages; ++st) {
    for (int mb = 0; mb < m; ++mb) s.programs[st % p].push_back(BwdW(st, mb));
    s.programs[st % p].push_back({st, kNoMicrobatch, ActionKind::kReduceGrad});
    s.programs[st % p].push_back({st, kNoMicrobatch, ActionKind::kOptimizer});
  }
  return s;
}

// How far each rank gets under ListSchedule (unit costs).
std::vector<size_t> ListSchedulePrefixes(const Schedule& s) {
  struct Hooks {
    std::vector<size_t> ran;
    double Duration(RankId, const Action&) { return 1.0; }
    double CommDelay(const Action&, StageId) { return 0.5; }
    void OnAction(RankId r, size_t i, double, double) { ran[r] = i + 1; }
  } hooks{std::vector<size_t>(s.num_ranks(), 0)};
  (void)ListSchedule(s, hooks);
  return hooks.ran;
}

TEST(DryRunTest, FinishesValidSchedules) {
  for (const Schedule& s : {OneFOneB(4, 8), InterleavedSplit(3, 4)}) {
    const std::vector<size_t> ran = DryRun(s);
    for (int r = 0; r < s.num_ranks(); ++r) EXPECT_EQ(ran[r], s.programs[r].size()) << "rank " << r;
    EXPECT_EQ(ran, ListSchedulePrefixes(s));
  }
}

// Which actions can run does not depend on time: the dry run (unit costs, no
// communication) must stop exactly where a run with communication delays
// does, on any reordering of the programs, and report those prefixes.
TEST(DryRunTest, StopsWhereListScheduleStops) {
  std::mt19937 rng(7);
  int deadlocks = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Schedule s = trial % 2 ? OneFOneB(4, 5) : InterleavedSplit(3, 3);
    for (int swaps = 0; swaps < 1 + trial % 4; ++swaps) {
      Program& prog = s.programs[rng() % s.programs.size()];
      std::swap(prog[rng() % prog.size()], prog[rng() % prog.size()]);
    }
    const std::vector<size_t> ran = DryRun(s);
    ASSERT_EQ(ran, ListSchedulePrefixes(s)) << "trial " << trial;
    for (int r = 0; r < s.num_ranks(); ++r) {
      if (ran[r] < s.programs[r].size()) {
        ++deadlocks;
        break;
      }
    }
  }
  EXPECT_GT(deadlocks, 50);  // the trials do exercise deadlocks
}

TEST(DryRunTest, DiagnosesAThreeRankCycle) {
  // Interleaved p = 3: rank 0 owns stages 0 and 3. Starting with 3F0 makes
  // rank 0 wait on rank 2, which waits on rank 1, which waits on rank 0.
  Schedule s = MakeEmptySchedule("x", *Placement::Interleaved(3, 2), 1);
  s.programs[0] = {Fwd(3, 0), Fwd(0, 0), Bwd(3, 0), Bwd(0, 0)};
  s.programs[1] = {Fwd(1, 0), Fwd(4, 0), Bwd(4, 0), Bwd(1, 0)};
  s.programs[2] = {Fwd(2, 0), Fwd(5, 0), Bwd(5, 0), Bwd(2, 0)};
  const std::vector<size_t> ran = DryRun(s);
  EXPECT_EQ(ran, (std::vector<size_t>{0, 0, 0}));
  const DeadlockDiagnosis d = DiagnoseDeadlock(s, ran);
  EXPECT_NE(d.message.find("cycle: rank 0's 3F0 (step 0) waits for rank 2's 2F0 (step 0), where rank 2 is stuck; "
                           "2F0 (step 0) waits for rank 1's 1F0 (step 0), where rank 1 is stuck; 1F0 (step 0) "
                           "waits for rank 0's 0F0 (step 1), which comes after 3F0 (step 0), closing the cycle"),
            std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("on rank 0 put 0F0 before 3F0"), std::string::npos) << d.message;
  ASSERT_TRUE(d.cell.has_value());
  EXPECT_EQ(*d.cell, (GridCell{0, 0}));
}

TEST(DryRunTest, ShortensLongCycles) {
  // The three-rank cycle above on 12 ranks: rank 0 waits on rank 11, which
  // waits on rank 10, ... rank 1 waits on rank 0. Only the first edges and
  // the closing one are spelled out.
  const int p = 12;
  Schedule s = MakeEmptySchedule("x", *Placement::Interleaved(p, 2), 1);
  for (int r = 0; r < p; ++r) s.programs[r] = {Fwd(r, 0), Fwd(r + p, 0), Bwd(r + p, 0), Bwd(r, 0)};
  std::swap(s.programs[0][0], s.programs[0][1]);
  const DeadlockDiagnosis d = DiagnoseDeadlock(s, DryRun(s));
  EXPECT_NE(d.message.find("cycle: rank 0's 12F0 (step 0) waits for rank 11's 11F0 (step 0), where rank 11 is stuck; "
                           "11F0 (step 0) waits for rank 10's 10F0"),
            std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("; ... (3 more ranks); 1F0 (step 0) waits for rank 0's 0F0 (step 1), which comes after "
                           "12F0 (step 0), closing the cycle"),
            std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("  rank 11 is stuck at step 0 (11F0), waiting for 10F0, which rank 10 runs at step 0"),
            std::string::npos)
      << d.message;
}

}  // namespace
}  // namespace pw
