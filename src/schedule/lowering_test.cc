#include "schedule/lowering.h"

#include <gtest/gtest.h>

#include "schedule/schedule_test_util.h"

#include <sstream>

#include "schedule/action_text.h"
#include "schedule/list_scheduler.h"

namespace pw {
namespace {

// A program from its text, e.g. "0F0 0SEND_F0 . 0B0" ('.' is idle).
Program P(std::string_view text, const KindRegistry& kinds = KindRegistry()) {
  Program out;
  std::istringstream in{std::string(text)};
  std::string token;
  while (in >> token) {
    if (token == ".") {
      out.push_back(kIdleAction);
      continue;
    }
    Result<Action> a = ParseAction(token, kinds);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    if (a.ok()) out.push_back(*a);
  }
  return out;
}

std::string Text(const Program& p, const KindRegistry& kinds = KindRegistry()) {
  std::string out;
  for (const Action& a : p) {
    if (!out.empty()) out += ' ';
    out += a.kind == ActionKind::kIdle ? "." : FormatAction(a, kinds);
  }
  return out;
}

// 1F1B on p ranks, stage r on rank r, written out by hand.
Schedule OneFOneB(int p, int m) { return testing_util::HandOneFOneB(p, m); }

// 1F1B with split backward: each B becomes I, and its W is deferred by
// `delay` backward steps (the W's of the tail follow at the end).
Schedule SplitOneFOneB(int p, int m, int delay) {
  Schedule s = OneFOneB(p, m);
  for (Program& prog : s.programs) {
    Program out;
    std::vector<Action> pending;
    for (const Action& a : prog) {
      if (a.kind != ActionKind::kBackward) {
        out.push_back(a);
        continue;
      }
      out.push_back(BwdI(a.stage, a.microbatch));
      pending.push_back(BwdW(a.stage, a.microbatch));
      if (static_cast<int>(pending.size()) > delay) {
        out.push_back(pending.front());
        pending.erase(pending.begin());
      }
    }
    out.insert(out.end(), pending.begin(), pending.end());
    prog = out;
  }
  return s;
}

// V-shape on 2 ranks, 4 stages (rank 0: 0 and 3, rank 1: 1 and 2), GPipe
// order within each rank.
Schedule VShapeGPipe(int m) {
  Schedule s = MakeEmptySchedule("v", *Placement::VShape(2), m);
  for (int r = 0; r < 2; ++r) {
    const StageId first = r, second = 3 - r;
    Program& prog = s.programs[r];
    for (int i = 0; i < m; ++i) prog.push_back(Fwd(first, i));
    for (int i = 0; i < m; ++i) prog.push_back(Fwd(second, i));
    for (int i = 0; i < m; ++i) prog.push_back(Bwd(second, i));
    for (int i = 0; i < m; ++i) prog.push_back(Bwd(first, i));
  }
  return s;
}

// Unit durations, no communication time: the validator's dry run.
struct UnitHooks {
  double Duration(RankId, const Action& a) { return a.kind == ActionKind::kIdle ? 0.0 : 1.0; }
  double CommDelay(const Action&, StageId) { return 0.0; }
  void OnAction(RankId, size_t, double, double end) {
    ++actions;
    makespan = std::max(makespan, end);
  }
  size_t actions = 0;
  double makespan = 0;
};

void ExpectRuns(const Schedule& s) {
  UnitHooks hooks;
  Status st = ListSchedule(s, hooks);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(hooks.actions, s.NumActions());
}

// ------------------------------------------------------ InsertCommunication

TEST(InsertCommunicationTest, OneFOneBTwoRanksByHand) {
  Schedule s = OneFOneB(2, 2);
  ASSERT_EQ(Text(s.programs[0]), "0F0 0F1 0B0 0B1");
  ASSERT_EQ(Text(s.programs[1]), "1F0 1B0 1F1 1B1");
  Result<Schedule> c = InsertCommunication(s);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(Text(c->programs[0]), "0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1");
  EXPECT_EQ(Text(c->programs[1]), "1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1");
  EXPECT_EQ(c->placement, s.placement);
  EXPECT_EQ(c->num_microbatches, 2);
  EXPECT_EQ(c->name, "1f1b");
}

TEST(InsertCommunicationTest, SameRankNeighboursExchangeNothing) {
  // V-shape: stages 1 -> 2 both live on rank 1; 2 -> 3 crosses to rank 0.
  Schedule s = VShapeGPipe(1);
  Result<Schedule> c = InsertCommunication(s);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(Text(c->programs[0]), "0F0 0SEND_F0 3RECV_F0 3F0 3B0 3SEND_B0 0RECV_B0 0B0");
  EXPECT_EQ(Text(c->programs[1]), "1RECV_F0 1F0 2F0 2SEND_F0 2RECV_B0 2B0 1B0 1SEND_B0");
  ExpectRuns(*c);
}

TEST(InsertCommunicationTest, SplitBackwardSendsAfterIOnly) {
  Schedule s = MakeEmptySchedule("zb", *Placement::Sequential(2), 1);
  s.programs[0] = P("0F0 . 0I0 0W0");
  s.programs[1] = P("1F0 1I0 1W0");
  Result<Schedule> c = InsertCommunication(s);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Text(c->programs[0]), "0F0 0SEND_F0 . 0RECV_B0 0I0 0W0");
  EXPECT_EQ(Text(c->programs[1]), "1RECV_F0 1F0 1I0 1SEND_B0 1W0");
}

TEST(InsertCommunicationTest, SingleRankNeedsNoCommunication) {
  Schedule s = MakeEmptySchedule("one", *Placement::Interleaved(1, 2), 1);
  s.programs[0] = P("0F0 1F0 1B0 0B0");
  Result<Schedule> c = InsertCommunication(s);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, s);
}

TEST(InsertCommunicationTest, RefusesASecondRun) {
  Result<Schedule> once = InsertCommunication(OneFOneB(2, 2));
  ASSERT_TRUE(once.ok());
  Result<Schedule> twice = InsertCommunication(*once);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(twice.status().message().find("0SEND_F0 at rank 0, position 1"), std::string::npos)
      << twice.status().message();
  EXPECT_NE(twice.status().message().find("StripToCompute"), std::string::npos);
}

TEST(InsertCommunicationTest, RejectsOutOfRangeActions) {
  Schedule s = OneFOneB(2, 2);
  s.programs[1].push_back(Fwd(5, 0));
  Result<Schedule> c = InsertCommunication(s);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("stage 5"), std::string::npos);
}

// --------------------------------------------------------- MergeInputWeight

TEST(MergeInputWeightTest, FusesAdjacentIAndW) {
  Schedule s = MakeEmptySchedule("zb", *Placement::Sequential(2), 3);
  s.programs[0] = P("0F0 0F1 0F2 0I0 0W0 0I1 . 0W1 0I2 0F2 0W2");
  s.programs[1] = P("1F0 1I0 1W1 1F1 1I1 1W0 1F2 1I2 1SEND_B2 1W2");
  Schedule m = MergeInputWeight(s);
  // I . W fuses (the idle stays), I x W does not, I W of another
  // microbatch does not, I SEND_B W fuses keeping the send.
  EXPECT_EQ(Text(m.programs[0]), "0F0 0F1 0F2 0B0 0B1 . 0I2 0F2 0W2");
  EXPECT_EQ(Text(m.programs[1]), "1F0 1I0 1W1 1F1 1I1 1W0 1F2 1B2 1SEND_B2");
  EXPECT_EQ(m.placement, s.placement);
}

TEST(MergeInputWeightTest, UndoesTheSplitOfOneFOneB) {
  EXPECT_EQ(MergeInputWeight(SplitOneFOneB(4, 8, 0)), OneFOneB(4, 8));
  // Deferred W's stay split.
  Schedule deferred = MergeInputWeight(SplitOneFOneB(4, 8, 2));
  EXPECT_TRUE(deferred.UsesSplitBackward());
  ExpectRuns(deferred);
}

TEST(MergeInputWeightTest, CommutesWithInsertCommunication) {
  Schedule s = SplitOneFOneB(3, 4, 0);
  Result<Schedule> merged_then_comm = InsertCommunication(MergeInputWeight(s));
  Result<Schedule> comm = InsertCommunication(s);
  ASSERT_TRUE(merged_then_comm.ok() && comm.ok());
  EXPECT_EQ(MergeInputWeight(*comm), *merged_then_comm);
}

// ---------------------------------------------------------- AddGradientSync

TEST(AddGradientSyncTest, OneFOneBTwoRanksByHand) {
  Result<Schedule> g = AddGradientSync(OneFOneB(2, 2));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(Text(g->programs[0]), "0F0 0F1 0B0 0B1 0REDUCE_GRAD 0OPT");
  EXPECT_EQ(Text(g->programs[1]), "1F0 1B0 1F1 1B1 1REDUCE_GRAD 1OPT");
  ExpectRuns(*g);
}

TEST(AddGradientSyncTest, ReducesAfterTheLastWeightGradientOfEachStage) {
  Schedule s = VShapeGPipe(2);
  s.programs[0] = P("0F0 0F1 3F0 3F1 3I0 3B1 3W0 0B0 0I1 . 0W1 .");
  Result<Schedule> g = AddGradientSync(s);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(Text(g->programs[0]), "0F0 0F1 3F0 3F1 3I0 3B1 3W0 3REDUCE_GRAD 0B0 0I1 . 0W1 0REDUCE_GRAD . 0OPT 3OPT");
  EXPECT_EQ(Text(g->programs[1]), "1F0 1F1 2F0 2F1 2B0 2B1 2REDUCE_GRAD 1B0 1B1 1REDUCE_GRAD 1OPT 2OPT");
  ExpectRuns(*g);
}

TEST(AddGradientSyncTest, EitherOrderWithInsertCommunicationGivesTheSameProgram) {
  Schedule s = OneFOneB(2, 2);
  Result<Schedule> a = AddGradientSync(s);
  ASSERT_TRUE(a.ok());
  Result<Schedule> ac = InsertCommunication(*a);
  Result<Schedule> c = InsertCommunication(s);
  ASSERT_TRUE(ac.ok() && c.ok());
  Result<Schedule> ca = AddGradientSync(*c);
  ASSERT_TRUE(ca.ok());
  EXPECT_EQ(*ac, *ca);
  EXPECT_EQ(Text(ca->programs[1]), "1RECV_F0 1F0 1B0 1SEND_B0 1RECV_F1 1F1 1B1 1SEND_B1 1REDUCE_GRAD 1OPT");
  EXPECT_EQ(Text(ca->programs[0]), "0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1 0REDUCE_GRAD 0OPT");
}

TEST(AddGradientSyncTest, RefusesASecondRunAndForwardOnlySchedules) {
  Result<Schedule> once = AddGradientSync(OneFOneB(2, 2));
  ASSERT_TRUE(once.ok());
  Result<Schedule> twice = AddGradientSync(*once);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(twice.status().message().find("0REDUCE_GRAD at rank 0, position 4"), std::string::npos)
      << twice.status().message();

  Schedule fwd = MakeEmptySchedule("inference", *Placement::Sequential(2), 1);
  fwd.programs[0] = P("0F0");
  fwd.programs[1] = P("1F0");
  Result<Schedule> g = AddGradientSync(fwd);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(g.status().message().find("stage 0 has no B or W on its rank 0"), std::string::npos)
      << g.status().message();
}

// --------------------------------------------------------- LowerForTraining

TEST(LowerForTrainingTest, IsGradientSyncThenCommunicationAndLowersAfresh) {
  for (const Schedule& s : {OneFOneB(4, 8), SplitOneFOneB(4, 8, 1), VShapeGPipe(3)}) {
    Result<Schedule> g = AddGradientSync(s);
    ASSERT_TRUE(g.ok());
    Result<Schedule> expected = InsertCommunication(*g);
    ASSERT_TRUE(expected.ok());
    Result<Schedule> lowered = LowerForTraining(s);
    ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
    EXPECT_EQ(*lowered, *expected);
    // A lowered schedule is stripped and lowered again, not refused.
    Result<Schedule> again = LowerForTraining(*lowered);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(*again, *expected);
  }
  Schedule fwd = MakeEmptySchedule("inference", *Placement::Sequential(2), 1);
  fwd.programs[0] = P("0F0");
  fwd.programs[1] = P("1F0");
  EXPECT_EQ(LowerForTraining(fwd).status().code(), StatusCode::kFailedPrecondition);
}

// ----------------------------------------------------------- StripToCompute

TEST(StripToComputeTest, UndoesTheOtherPasses) {
  for (const Schedule& s : {OneFOneB(4, 8), SplitOneFOneB(4, 8, 1), VShapeGPipe(3)}) {
    Result<Schedule> c = LowerForTraining(s);  // both passes (LowerForTrainingTest)
    ASSERT_TRUE(c.ok());
    EXPECT_GT(c->NumActions(), s.NumActions());
    EXPECT_EQ(StripToCompute(*c), s);
  }
}

TEST(StripToComputeTest, DropsUserKindsButKeepsIdleSteps) {
  Schedule s = MakeEmptySchedule("u", *Placement::Sequential(1), 1);
  KindInfo offload;
  offload.name = "OFFLOAD";
  offload.after = {ActionKind::kForward};
  ASSERT_TRUE(s.kinds.Register(offload).ok());
  s.programs[0] = P("0F0 0OFFLOAD0 . 0B0 0REDUCE_GRAD 0OPT", s.kinds);
  Schedule stripped = StripToCompute(s);
  EXPECT_EQ(Text(stripped.programs[0]), "0F0 . 0B0");
  EXPECT_EQ(stripped.kinds, s.kinds);
}

// -------------------------------------------- lowered schedules still run

TEST(LoweringTest, LoweredSchedulesRunWithoutDeadlock) {
  std::vector<Schedule> schedules = {OneFOneB(1, 1),           OneFOneB(4, 8),   OneFOneB(4, 2),
                                     SplitOneFOneB(4, 8, 0),   SplitOneFOneB(4, 8, 3), VShapeGPipe(4)};
  for (const Schedule& s : schedules) {
    SCOPED_TRACE(s.name + " p=" + std::to_string(s.num_ranks()) + " m=" + std::to_string(s.num_microbatches));
    ExpectRuns(s);
    Result<Schedule> comm = InsertCommunication(s);
    ASSERT_TRUE(comm.ok()) << comm.status().ToString();
    ExpectRuns(*comm);
    Result<Schedule> sync = AddGradientSync(*comm);
    ASSERT_TRUE(sync.ok()) << sync.status().ToString();
    ExpectRuns(*sync);
    ExpectRuns(MergeInputWeight(*sync));
    ExpectRuns(StripToCompute(*sync));
  }
}

TEST(LoweringTest, ADeadlockStaysADeadlock) {
  // Rank 1 runs B before F: no pass may hide that.
  Schedule s = MakeEmptySchedule("bad", *Placement::Sequential(2), 1);
  s.programs[0] = P("0F0 0B0");
  s.programs[1] = P("1B0 1F0");
  Result<Schedule> lowered = InsertCommunication(s);
  ASSERT_TRUE(lowered.ok());
  lowered = AddGradientSync(*lowered);
  ASSERT_TRUE(lowered.ok());
  UnitHooks hooks;
  EXPECT_EQ(ListSchedule(*lowered, hooks).code(), StatusCode::kDeadlock);
}

TEST(LoweringTest, PassesAreIdentityOnEmptyPrograms) {
  Schedule s = MakeEmptySchedule("empty", *Placement::Sequential(3), 2);
  Result<Schedule> c = InsertCommunication(s);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, s);
  EXPECT_EQ(MergeInputWeight(s), s);
  EXPECT_EQ(StripToCompute(s), s);
}

}  // namespace
}  // namespace pw
