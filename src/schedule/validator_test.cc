#include "schedule/validator.h"

#include <gtest/gtest.h>

#include "schedule/schedule_test_util.h"

#include <chrono>

namespace pw {
namespace {

// gmock is not linked; a substring check with a readable failure.
#define EXPECT_CONTAINS(text, part)                                       \
  EXPECT_NE(std::string(text).find(part), std::string::npos)              \
      << "expected to find:\n" << (part) << "\nin:\n" << (text)

// 1F1B by hand: rank r warms up with p-1-r forwards, then alternates F and B.
Schedule OneFOneB(int p, int m) { return testing_util::HandOneFOneB(p, m); }

Schedule GPipe(int p, int m) {
  Schedule s = MakeEmptySchedule("gpipe", *Placement::Sequential(p), m);
  for (int r = 0; r < p; ++r) {
    for (int mb = 0; mb < m; ++mb) s.programs[r].push_back(Fwd(r, mb));
    for (int mb = m - 1; mb >= 0; --mb) s.programs[r].push_back(Bwd(r, mb));
  }
  return s;
}

Action Send(ActionKind k, StageId s, MicrobatchId mb) { return {s, mb, k}; }
Action StageOp(ActionKind k, StageId s) { return {s, kNoMicrobatch, k}; }

TEST(ValidatorTest, AcceptsHandWrittenOneFOneB) {
  const Schedule s = OneFOneB(2, 3);
  // The exact programs of the task: rank 0 warms up with one forward.
  ASSERT_EQ(s.programs[0], (Program{Fwd(0, 0), Fwd(0, 1), Bwd(0, 0), Fwd(0, 2), Bwd(0, 1), Bwd(0, 2)}));
  ASSERT_EQ(s.programs[1], (Program{Fwd(1, 0), Bwd(1, 0), Fwd(1, 1), Bwd(1, 1), Fwd(1, 2), Bwd(1, 2)}));
  EXPECT_TRUE(ValidateSchedule(s).ok()) << ValidateSchedule(s).ToString();
  const ValidationReport report = CheckSchedule(s);
  EXPECT_TRUE(report.ok());
  EXPECT_TRUE(report.dry_run_done);
}

TEST(ValidatorTest, AcceptsGPipe) {
  for (int p : {1, 2, 4}) {
    for (int m : {1, 3, 8}) EXPECT_TRUE(ValidateSchedule(GPipe(p, m)).ok()) << p << " " << m;
  }
}

TEST(ValidatorTest, AcceptsSplitBackwardStageOpsAndCommunication) {
  // p = 2, m = 2, zero-bubble flavour with explicit transfers.
  Schedule s = MakeEmptySchedule("zb", *Placement::Sequential(2), 2);
  using K = ActionKind;
  s.programs[0] = {Fwd(0, 0),  Send(K::kSendForward, 0, 0), Fwd(0, 1), Send(K::kSendForward, 0, 1),
                   Send(K::kRecvBackward, 0, 0), BwdI(0, 0), Send(K::kRecvBackward, 0, 1), BwdI(0, 1),
                   BwdW(0, 0), BwdW(0, 1), StageOp(K::kReduceGrad, 0), StageOp(K::kOptimizer, 0)};
  s.programs[1] = {Send(K::kRecvForward, 1, 0), Fwd(1, 0), BwdI(1, 0), Send(K::kSendBackward, 1, 0),
                   Send(K::kRecvForward, 1, 1), Fwd(1, 1), BwdI(1, 1), Send(K::kSendBackward, 1, 1),
                   BwdW(1, 0), BwdW(1, 1), StageOp(K::kReduceGrad, 1), StageOp(K::kOptimizer, 1)};
  EXPECT_TRUE(ValidateSchedule(s).ok()) << ValidateSchedule(s).ToString();
}

TEST(ValidatorTest, AcceptsVShapeWithBothStagesOnOneRank) {
  // p = 2, stages 0..3; rank 0 owns 0 and 3, rank 1 owns 1 and 2.
  Schedule s = MakeEmptySchedule("v", *Placement::VShape(2), 1);
  s.programs[0] = {Fwd(0, 0), Fwd(3, 0), Bwd(3, 0), Bwd(0, 0)};
  s.programs[1] = {Fwd(1, 0), Fwd(2, 0), Bwd(2, 0), Bwd(1, 0)};
  EXPECT_TRUE(ValidateSchedule(s).ok()) << ValidateSchedule(s).ToString();
}

TEST(ValidatorTest, ReportsMissingActionWithItsOwnerRank) {
  Schedule s = OneFOneB(2, 3);
  s.programs[0].pop_back();  // 0B2
  const Status st = ValidateSchedule(s);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(st.message(), "missing 0B2: stage 0, microbatch 2 has no backward; add 0B2 (or 0I2 and "
                                      "0W2) to the program of rank 0, which owns stage 0, after 0F2");
  EXPECT_CONTAINS(st.message(), "> rank 0 | 0F0  0F1  0B0  0F2  0B1");
}

TEST(ValidatorTest, ReportsMissingWeightGradientOfSplitBackward) {
  Schedule s = MakeEmptySchedule("x", *Placement::Sequential(1), 1);
  s.programs[0] = {Fwd(0, 0), BwdI(0, 0)};
  const Status st = ValidateSchedule(s);
  EXPECT_CONTAINS(st.message(), "missing 0W0: 0I0 computes only the input gradient");
  EXPECT_CONTAINS(st.message(), "[0I0]");
}

TEST(ValidatorTest, ForwardOnlySchedulesPassWhenBackwardIsNotRequired) {
  Schedule s = MakeEmptySchedule("fwd", *Placement::Sequential(2), 2);
  s.programs[0] = {Fwd(0, 0), Fwd(0, 1)};
  s.programs[1] = {Fwd(1, 0), Fwd(1, 1)};
  EXPECT_FALSE(ValidateSchedule(s).ok());
  ValidateOptions o;
  o.require_backward = false;
  EXPECT_TRUE(ValidateSchedule(s, o).ok()) << ValidateSchedule(s, o).ToString();
}

TEST(ValidatorTest, ReportsDuplicateActionAndWhereTheFirstIs) {
  Schedule s = OneFOneB(2, 3);
  s.programs[0][3] = Fwd(0, 1);  // 0F2 became a second 0F1
  const Status st = ValidateSchedule(s);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(st.message(), "rank 0, step 3: 0F1 appears a second time (first at rank 0, step 1); each "
                                      "(stage, microbatch) runs its forward exactly once, so remove one of them");
  EXPECT_CONTAINS(st.message(), "> rank 0 | 0F0 [0F1] 0B0 >0F1< 0B1  0B2");
  // 0F2 is then missing too: counted, and named after the first problem.
  EXPECT_CONTAINS(st.message(), "more problem");
  const ValidationReport report = CheckSchedule(s);
  ASSERT_GE(report.problems.size(), 2u);
  EXPECT_CONTAINS(report.problems[1].message, "missing 0F2");
}

TEST(ValidatorTest, ReportsActionOnTheWrongRank) {
  Schedule s = OneFOneB(2, 3);
  s.programs[0].erase(s.programs[0].begin() + 3);  // 0F2 ...
  s.programs[1].insert(s.programs[1].begin() + 3, Fwd(0, 2));  // ... moved to rank 1
  const Status st = ValidateSchedule(s);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(st.message(), "rank 1, step 3: 0F2 belongs to stage 0, which the placement puts on rank 0; "
                                      "move it to rank 0's program");
  EXPECT_CONTAINS(st.message(), "> rank 1 | 1F0  1B0  1F1 >0F2< 1B1");
}

TEST(ValidatorTest, ReportsBackwardMixedWithSplitBackward) {
  Schedule s = MakeEmptySchedule("x", *Placement::Sequential(1), 2);
  s.programs[0] = {Fwd(0, 0), Fwd(0, 1), Bwd(0, 0), BwdI(0, 1), BwdW(0, 1), BwdI(0, 0)};
  const Status st = ValidateSchedule(s);
  EXPECT_CONTAINS(st.message(), "rank 0, step 5: 0I0 splits the backward of stage 0, microbatch 0, which 0B0 "
                                      "(rank 0, step 2) already runs in full; use either B, or I and W, not both");
}

TEST(ValidatorTest, ReportsImpossibleOrderOnOneRank) {
  Schedule s = OneFOneB(2, 3);
  std::swap(s.programs[0][0], s.programs[0][2]);  // 0B0 0F1 0F0 ...
  const Status st = ValidateSchedule(s);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_CONTAINS(st.message(), "rank 0, step 0: impossible order: 0B0 needs 0F0, which comes later on the "
                                      "same rank (step 2); a rank runs its program in order, so move 0F0 before "
                                      "0B0");
  EXPECT_CONTAINS(st.message(), ">0B0< 0F1 [0F0]");
}

TEST(ValidatorTest, ReportsWeightGradientBeforeItsInputGradient) {
  Schedule s = MakeEmptySchedule("x", *Placement::Sequential(1), 1);
  s.programs[0] = {Fwd(0, 0), BwdW(0, 0), BwdI(0, 0)};
  EXPECT_CONTAINS(ValidateSchedule(s).message(), "rank 0, step 1: impossible order: 0W0 needs 0I0");
}

TEST(ValidatorTest, ReportsCrossRankDeadlockWithItsCycle) {
  Schedule s = MakeEmptySchedule("stuck", *Placement::Sequential(2), 3);
  s.programs[0] = {Fwd(0, 0), Bwd(0, 0), Fwd(0, 1), Bwd(0, 1), Fwd(0, 2), Bwd(0, 2)};
  s.programs[1] = {Fwd(1, 1), Fwd(1, 0), Bwd(1, 0), Bwd(1, 1), Fwd(1, 2), Bwd(1, 2)};
  const Status st = ValidateSchedule(s);
  ASSERT_EQ(st.code(), StatusCode::kDeadlock) << st.ToString();
  const std::string& m = st.message();
  EXPECT_CONTAINS(m, "the schedule deadlocks: the dry run stops after 1 of 12 actions; no rank can make progress:");
  EXPECT_CONTAINS(m, "rank 0 is stuck at step 1 (0B0), waiting for 1B0, which rank 1 runs at step 2");
  EXPECT_CONTAINS(m, "rank 1 is stuck at step 0 (1F1), waiting for 0F1, which rank 0 runs at step 2");
  EXPECT_CONTAINS(m, "cycle: rank 0's 0B0 (step 1) waits for rank 1's 1B0 (step 2), which comes after 1F1 "
                           "(step 0); 1F1 (step 0) waits for rank 0's 0F1 (step 2), which comes after 0B0 (step 1), "
                           "closing the cycle");
  EXPECT_CONTAINS(m, "on rank 1 put 1B0 before 1F1, or on rank 0 put 0F1 before 0B0");
  EXPECT_CONTAINS(m, "> rank 0 | 0F0 >0B0<[0F1]");
  EXPECT_CONTAINS(m, "  rank 1 |[1F1] 1F0 [1B0]");
}

TEST(ValidatorTest, ReportsUnpairedAndNeedlessCommunication) {
  using K = ActionKind;
  Schedule s = GPipe(2, 1);
  s.programs[0].insert(s.programs[0].begin() + 1, Send(K::kSendForward, 0, 0));
  Status st = ValidateSchedule(s);
  EXPECT_CONTAINS(st.message(), "rank 0, step 1: 0SEND_F0 has no matching 1RECV_F0 on rank 1, which owns "
                                      "stage 1; add 1RECV_F0 to rank 1's program before 1F0");

  s.programs[1].insert(s.programs[1].begin() + 1, Send(K::kRecvForward, 1, 0));  // after 1F0: too late
  st = ValidateSchedule(s);
  EXPECT_CONTAINS(st.message(), "rank 1, step 1: 1RECV_F0 comes after 1F0 (step 0), which needs the "
                                      "activations it receives; move it before 1F0");

  Schedule one = MakeEmptySchedule("x", *Placement::Interleaved(1, 2), 1);  // both stages on rank 0
  one.programs[0] = {Fwd(0, 0), Send(K::kSendForward, 0, 0), Fwd(1, 0), Bwd(1, 0), Bwd(0, 0)};
  EXPECT_CONTAINS(ValidateSchedule(one).message(),
              "0SEND_F0 sends activations to stage 1, which is on the same rank");

  Schedule last = GPipe(2, 1);
  last.programs[1].insert(last.programs[1].begin() + 1, Send(K::kSendForward, 1, 0));
  EXPECT_CONTAINS(ValidateSchedule(last).message(), "1SEND_F0 sends activations to stage 2, which does not "
                                                          "exist (stage 1 is the last stage); remove it");
}

TEST(ValidatorTest, ReportsOutOfRangeStageAndMicrobatch) {
  Schedule s = OneFOneB(2, 3);
  s.programs[1][2] = Fwd(5, 1);
  Status st = ValidateSchedule(s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(st.message(), "rank 1, step 2: 5F1 names stage 5, but the schedule has stages 0..1");
  EXPECT_CONTAINS(st.message(), ">5F1<");

  s = OneFOneB(2, 3);
  s.programs[0][4] = Bwd(0, 3);
  st = ValidateSchedule(s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_CONTAINS(st.message(), "rank 0, step 4: 0B3 names microbatch 3, but the schedule has microbatches "
                                      "0..2");

  s = OneFOneB(2, 3);
  s.programs[0].push_back({0, 1, ActionKind::kReduceGrad});
  EXPECT_CONTAINS(ValidateSchedule(s).message(), "0REDUCE_GRAD1 takes no microbatch; write it as 0REDUCE_GRAD");

  s = OneFOneB(2, 3);
  s.programs[0].push_back({0, 0, static_cast<ActionKind>(99)});
  EXPECT_CONTAINS(ValidateSchedule(s).message(), "action kind id 99 is not registered");
}

TEST(ValidatorTest, ReportsStageActionsOutOfPlace) {
  using K = ActionKind;
  Schedule s = OneFOneB(2, 3);
  s.programs[0].insert(s.programs[0].end() - 1, StageOp(K::kReduceGrad, 0));
  EXPECT_CONTAINS(ValidateSchedule(s).message(),
              "rank 0, step 5: 0REDUCE_GRAD comes before 0B2 (step 6), but it needs the weight gradients of "
                        "every microbatch of stage 0");

  s = OneFOneB(2, 3);
  s.programs[1].push_back(StageOp(K::kOptimizer, 1));
  s.programs[1].push_back(StageOp(K::kReduceGrad, 1));
  EXPECT_CONTAINS(ValidateSchedule(s).message(), "rank 1, step 6: 1OPT comes before 1REDUCE_GRAD (step 7)");

  s = OneFOneB(2, 3);
  s.programs[1].push_back(StageOp(K::kReduceGrad, 1));
  s.programs[1].push_back(StageOp(K::kReduceGrad, 1));
  EXPECT_CONTAINS(ValidateSchedule(s).message(), "rank 1, step 7: 1REDUCE_GRAD appears a second time");
}

TEST(ValidatorTest, ReportsUserKindWhoseAfterKindIsAbsent) {
  Schedule s = OneFOneB(1, 1);
  KindInfo offload;
  offload.name = "OFFLOAD";
  offload.after = {ActionKind::kForward};
  const ActionKind off = *s.kinds.Register(offload);
  KindInfo reload;
  reload.name = "RELOAD";
  reload.after = {off};
  reload.before = {ActionKind::kBackward};
  const ActionKind rel = *s.kinds.Register(reload);
  s.programs[0] = {Fwd(0, 0), {0, 0, off}, {0, 0, rel}, Bwd(0, 0)};
  EXPECT_TRUE(ValidateSchedule(s).ok()) << ValidateSchedule(s).ToString();

  s.programs[0] = {Fwd(0, 0), {0, 0, rel}, Bwd(0, 0)};
  EXPECT_CONTAINS(ValidateSchedule(s).message(),
              "rank 0, step 1: 0RELOAD0 must run after 0OFFLOAD0 (kind RELOAD's rule 'after OFFLOAD'), but "
                        "the schedule has no 0OFFLOAD0");

  s.programs[0] = {Fwd(0, 0), Bwd(0, 0), {0, 0, off}, {0, 0, rel}};  // RELOAD must precede B
  EXPECT_CONTAINS(ValidateSchedule(s).message(), "impossible order: 0B0 needs 0RELOAD0");
}

TEST(ValidatorTest, ReportsStructureProblemsWithoutAGrid) {
  Schedule s = OneFOneB(2, 3);
  s.programs.pop_back();
  const Status st = ValidateSchedule(s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "the schedule has 1 program but its placement has 2 ranks; give exactly one program per rank");
}

TEST(ValidatorTest, ReportListsProblemsInCheckOrder) {
  Schedule s = OneFOneB(2, 3);
  std::swap(s.programs[1][0], s.programs[1][1]);      // order: 1B0 before 1F0
  s.programs[0][0] = Fwd(1, 0);                        // placement (and 0F0 missing, 1F0 duplicated)
  const ValidationReport report = CheckSchedule(s);
  ASSERT_GE(report.problems.size(), 3u);
  EXPECT_EQ(report.problems[0].kind, ProblemKind::kPlacement);
  for (size_t i = 1; i < report.problems.size(); ++i) {
    EXPECT_LE(report.problems[i - 1].kind, report.problems[i].kind);
  }
  EXPECT_FALSE(report.dry_run_done);
  ValidateOptions o;
  o.max_problems = 1;
  const ValidationReport capped = CheckSchedule(s, o);
  EXPECT_EQ(capped.problems.size(), 1u);
  EXPECT_EQ(capped.num_problems, report.num_problems);
}

TEST(ValidatorTest, ValidatesLargeOneFOneBInLinearTime) {
  const Schedule s = OneFOneB(64, 1024);  // 131 k actions
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(ValidateSchedule(s).ok());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 1.0);
}

// p = 1024, m = 8192: 16.7 M actions; run with --gtest_also_run_disabled_tests.
TEST(ValidatorTest, DISABLED_ValidatesHugeOneFOneBQuickly) {
  const Schedule s = OneFOneB(1024, 8192);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(ValidateSchedule(s).ok());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("validated %zu actions in %.3f s\n", s.NumActions(), secs);
}

}  // namespace
}  // namespace pw
