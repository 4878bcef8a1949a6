// BubblePredictor against 1F1B on 2 ranks and 3 microbatches, computed by
// hand with F = 1 ms, B = 2 ms per stage and free communication:
//
//   rank 0: F0 [0,1] F1 [1,2] (wait 2) B0 [4,6] F2 [6,7] B1 [7,9] (wait 1) B2 [10,12]
//   rank 1: (wait 1) F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7] F2 [7,8] B2 [8,10] (tail 2)
//
// makespan 12 ms; each rank idles 3 ms per step.
#include "harvest/bubble_predictor.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "schedule/lowering.h"
#include "schedule/schedule_test_util.h"

namespace pw {
namespace {

struct Lowered {
  Schedule compute, lowered;
};

Lowered OneFOneB(int p, int m) {
  Lowered l;
  l.compute = testing_util::HandOneFOneB(p, m);
  Result<Schedule> synced = AddGradientSync(l.compute);
  EXPECT_TRUE(synced.ok()) << synced.status().ToString();
  Result<Schedule> lowered = InsertCommunication(*synced);
  EXPECT_TRUE(lowered.ok()) << lowered.status().ToString();
  l.lowered = *lowered;
  return l;
}

CostModel Costs(double f, double b) {
  CostModel c;
  c.stages = {StageCost{}};
  c.stages[0].forward = f;
  c.stages[0].backward = b;
  return c;
}

// The predicted wait of each RECV of `rank`, by action name.
std::map<std::string, double> Waits(const Lowered& l, const BubblePredictor& p, int rank) {
  std::map<std::string, double> out;
  const Program& program = l.lowered.programs[rank];
  for (size_t i = 0; i < program.size(); ++i) {
    if (p.IdleBeforeUs(static_cast<int>(i)) > 0) out[l.lowered.ActionName(program[i])] = p.IdleBeforeUs(i);
  }
  return out;
}

TEST(BubblePredictorTest, HandComputedOneFOneBTwoRanks) {
  Lowered l = OneFOneB(2, 3);
  Result<BubblePredictor> r0 = BubblePredictor::Create(l.compute, l.lowered, 0, Costs(1, 2));
  Result<BubblePredictor> r1 = BubblePredictor::Create(l.compute, l.lowered, 1, Costs(1, 2));
  ASSERT_TRUE(r0.ok()) << r0.status().ToString();
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_DOUBLE_EQ(r0->MakespanUs(), 12000);
  EXPECT_DOUBLE_EQ(r1->MakespanUs(), 12000);

  // Rank 0 waits for B0's gradient (2 ms) and B2's (1 ms), never at the end.
  std::map<std::string, double> w0 = Waits(l, *r0, 0);
  ASSERT_EQ(w0.size(), 2u);
  EXPECT_DOUBLE_EQ(w0["0RECV_B0"], 2000);
  EXPECT_DOUBLE_EQ(w0["0RECV_B2"], 1000);
  EXPECT_DOUBLE_EQ(r0->TailUs(), 0);
  EXPECT_DOUBLE_EQ(r0->IdlePerStepUs(), 3000);

  // Rank 1 waits for F0's activation (1 ms) and at the end of the step (2 ms).
  std::map<std::string, double> w1 = Waits(l, *r1, 1);
  ASSERT_EQ(w1.size(), 1u);
  EXPECT_DOUBLE_EQ(w1["1RECV_F0"], 1000);
  EXPECT_DOUBLE_EQ(r1->TailUs(), 2000);
  EXPECT_DOUBLE_EQ(r1->IdlePerStepUs(), 3000);

  // The lookup an idle edge does.
  const Program& p1 = l.lowered.programs[1];
  int recv_f0 = -1;
  for (size_t i = 0; i < p1.size(); ++i) {
    if (l.lowered.ActionName(p1[i]) == "1RECV_F0") recv_f0 = static_cast<int>(i);
  }
  ASSERT_GE(recv_f0, 0);
  EXPECT_DOUBLE_EQ(r1->PredictedUs({IdleReason::kRecvWait, 5, recv_f0}), 1000);
  EXPECT_DOUBLE_EQ(r1->PredictedUs({IdleReason::kRecvWait, 5, 999}), 0);
  // The tail is spent in the first OPT's gradient-norm all-reduce, waiting
  // for rank 0; what follows it is left to the edge's history.
  ASSERT_TRUE(r1->tail_at_norm_wait());
  EXPECT_DOUBLE_EQ(r1->PredictedUs({IdleReason::kNormWait, 5, 0}), 2000);
  EXPECT_DOUBLE_EQ(r1->PredictedUs({IdleReason::kBetweenSteps, 5, -1}), 0);

  // The simulator's bubbles of each rank add up to the same idle time.
  for (const BubblePredictor* p : {&*r0, &*r1}) {
    double sum = 0;
    for (const Bubble& b : p->bubbles()) sum += b.length();
    EXPECT_NEAR(sum, p->IdlePerStepUs(), 1e-6);
  }
}

// Without a gradient-norm all-reduce — a program without OPT, or one
// pipeline rank — the tail is the kBetweenSteps gap.
TEST(BubblePredictorTest, TailIsBetweenStepsWithoutNormAllReduce) {
  Lowered l = OneFOneB(2, 3);
  Result<BubblePredictor> r1 = BubblePredictor::Create(l.compute, l.compute, 1, Costs(1, 2));
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_FALSE(r1->tail_at_norm_wait());
  EXPECT_DOUBLE_EQ(r1->PredictedUs({IdleReason::kBetweenSteps, 5, -1}), 2000);
  EXPECT_DOUBLE_EQ(r1->PredictedUs({IdleReason::kNormWait, 5, 0}), 0);

  Lowered one = OneFOneB(1, 2);
  Result<BubblePredictor> r0 = BubblePredictor::Create(one.compute, one.lowered, 0, Costs(1, 2));
  ASSERT_TRUE(r0.ok()) << r0.status().ToString();
  EXPECT_FALSE(r0->tail_at_norm_wait());
}

// Uneven costs move the bubbles: with stage 1 twice as slow, rank 0 waits
// longer for gradients. F0 = 1, B0 = 2; F1 = 2, B1 = 4:
//   rank 1: F0 [1,3] B0 [3,7] F1 [7,9] B1 [9,13] F2 [13,15] B2 [15,19]
//   rank 0: F0 [0,1] F1 [1,2] B0 [7,9] F2 [9,10] B1 [13,15] B2 [19,21]
// so rank 0 waits 5 (RECV_B0), 3 (RECV_B1), 4 (RECV_B2); rank 1 waits 1
// (RECV_F0) and 2 at the tail. Communication of 0.5 ms adds to each wait
// that depends on the other rank.
TEST(BubblePredictorTest, UnevenStagesAndCommunication) {
  Lowered l = OneFOneB(2, 3);
  CostModel c;
  c.stages = {StageCost{}, StageCost{}};
  c.stages[0].forward = 1;
  c.stages[0].backward = 2;
  c.stages[1].forward = 2;
  c.stages[1].backward = 4;
  Result<BubblePredictor> r0 = BubblePredictor::Create(l.compute, l.lowered, 0, c);
  ASSERT_TRUE(r0.ok()) << r0.status().ToString();
  std::map<std::string, double> w0 = Waits(l, *r0, 0);
  EXPECT_DOUBLE_EQ(w0["0RECV_B0"], 5000);
  EXPECT_DOUBLE_EQ(w0["0RECV_B1"], 3000);
  EXPECT_DOUBLE_EQ(w0["0RECV_B2"], 4000);
  Result<BubblePredictor> r1 = BubblePredictor::Create(l.compute, l.lowered, 1, c);
  ASSERT_TRUE(r1.ok());
  EXPECT_DOUBLE_EQ(Waits(l, *r1, 1)["1RECV_F0"], 1000);
  EXPECT_DOUBLE_EQ(r1->TailUs(), 2000);

  c.comm_latency = 0.5;
  Result<BubblePredictor> c1 = BubblePredictor::Create(l.compute, l.lowered, 1, c);
  ASSERT_TRUE(c1.ok());
  EXPECT_DOUBLE_EQ(Waits(l, *c1, 1)["1RECV_F0"], 1500);
}

// Free memory in bubbles: cap - (static + live activations). Rank 0 holds
// F0 and F1's activations in its first bubble ([2,4]), F2's in its second.
TEST(BubblePredictorTest, FreeMemoryInBubbles) {
  Lowered l = OneFOneB(2, 3);
  CostModel c = Costs(1, 2);
  c.stages[0].activation_bytes = 10;
  c.static_bytes = {100};
  Result<BubblePredictor> r0 = BubblePredictor::Create(l.compute, l.lowered, 0, c, 1000.0);
  ASSERT_TRUE(r0.ok()) << r0.status().ToString();
  ASSERT_EQ(r0->bubbles().size(), 2u);
  EXPECT_DOUBLE_EQ(r0->bubbles()[0].start, 2000);
  EXPECT_DOUBLE_EQ(r0->bubbles()[0].end, 4000);
  ASSERT_TRUE(r0->bubbles()[0].free_memory.has_value());
  EXPECT_DOUBLE_EQ(*r0->bubbles()[0].free_memory, 1000 - 120);
  EXPECT_DOUBLE_EQ(*r0->bubbles()[1].free_memory, 1000 - 110);
  ASSERT_TRUE(r0->min_free_memory_bytes().has_value());
  EXPECT_DOUBLE_EQ(*r0->min_free_memory_bytes(), 880);
  // Without a cap there is no free-memory figure.
  Result<BubblePredictor> nocap = BubblePredictor::Create(l.compute, l.lowered, 0, c);
  ASSERT_TRUE(nocap.ok());
  EXPECT_FALSE(nocap->min_free_memory_bytes().has_value());
}

TEST(BubblePredictorTest, BadInput) {
  Lowered l = OneFOneB(2, 3);
  Result<BubblePredictor> bad = BubblePredictor::Create(l.compute, l.lowered, 2, Costs(1, 2));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("rank 2"), std::string::npos);
  Lowered other = OneFOneB(4, 4);
  EXPECT_FALSE(BubblePredictor::Create(l.compute, other.lowered, 0, Costs(1, 2)).ok());
}

}  // namespace
}  // namespace pw
