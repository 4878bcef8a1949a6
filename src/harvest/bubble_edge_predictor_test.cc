// BubbleEdgePredictor fed edges with the times given: 1F1B on 2 ranks and 3
// microbatches, F = 1 ms, B = 2 ms (bubble_predictor_test.cc computes it by
// hand): rank 1 waits 1 ms at RECV_F0, 0 at RECV_F1, 2 ms at the tail (its
// first OPT's norm wait).
#include "harvest/bubble_edge_predictor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "schedule/lowering.h"
#include "schedule/schedule_test_util.h"

namespace pw {
namespace {

using std::chrono::microseconds;

struct RankOne {
  Schedule compute, lowered;
  int recv_f0 = -1, recv_f1 = -1, first_opt = -1;
};

int IndexOf(const Schedule& s, int rank, const std::string& name) {
  for (size_t i = 0; i < s.programs[rank].size(); ++i) {
    if (s.ActionName(s.programs[rank][i]) == name) return static_cast<int>(i);
  }
  return -1;
}

RankOne TwoRankOneFOneB() {
  RankOne r;
  r.compute = testing_util::HandOneFOneB(2, 3);
  r.lowered = *InsertCommunication(*AddGradientSync(r.compute));
  r.recv_f0 = IndexOf(r.lowered, 1, "1RECV_F0");
  r.recv_f1 = IndexOf(r.lowered, 1, "1RECV_F1");
  r.first_opt = IndexOf(r.lowered, 1, "1OPT");
  return r;
}

BubblePredictor Simulated(const RankOne& r) {
  CostModel c;
  c.stages = {StageCost{}};
  c.stages[0].forward = 1;
  c.stages[0].backward = 2;
  Result<BubblePredictor> p = BubblePredictor::Create(r.compute, r.lowered, 1, c);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

// A bubble at `edge` lasting `us` microseconds, from `t`; returns its end.
BubbleEdgePredictor::TimePoint Bubble(BubbleEdgePredictor& p, const IdleEdge& edge,
                                      BubbleEdgePredictor::TimePoint t, int64_t us) {
  EXPECT_TRUE(p.OnIdle(edge, t));
  const std::optional<double> seconds = p.OnBusy(t + microseconds(us));
  EXPECT_TRUE(seconds.has_value());
  return t + microseconds(us);
}

TEST(BubbleEdgePredictorTest, EdgesAlternateAndBubblesAreTimedFromTheGivenTimes) {
  const RankOne r = TwoRankOneFOneB();
  BubbleEdgePredictor p(r.lowered.programs[1].size(), 500);
  const BubbleEdgePredictor::TimePoint t0{};
  EXPECT_FALSE(p.OnBusy(t0).has_value());  // not idle: ignored
  EXPECT_TRUE(p.OnIdle({IdleReason::kRecvWait, 0, r.recv_f0}, t0));
  EXPECT_FALSE(p.OnIdle({IdleReason::kRecvWait, 0, r.recv_f1}, t0 + microseconds(5)));  // repeated
  EXPECT_TRUE(p.idle());
  EXPECT_EQ(p.open_edge(), r.recv_f0);
  EXPECT_EQ(p.idle_since(), t0);
  const std::optional<double> seconds = p.OnBusy(t0 + microseconds(1500));
  ASSERT_TRUE(seconds.has_value());
  EXPECT_DOUBLE_EQ(*seconds, 0.0015);
  EXPECT_FALSE(p.idle());
  EXPECT_EQ(p.TimesSeen(r.recv_f0), 1);
  EXPECT_EQ(p.TimesSeen(r.recv_f1), 0);
}

TEST(BubbleEdgePredictorTest, NoBudgetBeforeTheSimulatorThenItsPredictionAboveTheMinimum) {
  const RankOne r = TwoRankOneFOneB();
  BubbleEdgePredictor p(r.lowered.programs[1].size(), 500);
  const IdleEdge recv_f0{IdleReason::kRecvWait, 0, r.recv_f0};
  EXPECT_FALSE(p.BudgetUs(recv_f0).has_value());
  EXPECT_EQ(p.PredictedUs(recv_f0), 0);
  p.SetSimulated(Simulated(r));
  ASSERT_TRUE(p.BudgetUs(recv_f0).has_value());
  EXPECT_DOUBLE_EQ(*p.BudgetUs(recv_f0), 1000);
  EXPECT_FALSE(p.BudgetUs({IdleReason::kRecvWait, 0, r.recv_f1}).has_value());  // 0 < 500
  ASSERT_TRUE(p.BudgetUs({IdleReason::kNormWait, 0, r.first_opt}).has_value());
  EXPECT_DOUBLE_EQ(*p.BudgetUs({IdleReason::kNormWait, 0, r.first_opt}), 2000);
  EXPECT_FALSE(p.BudgetUs({IdleReason::kBetweenSteps, 0, -1}).has_value());  // the tail went to the norm wait
}

// The simulator's 1000 µs at RECV_F0 until the edge has been seen
// kObservedEdges times; then its history, mean - deviation, when larger.
TEST(BubbleEdgePredictorTest, AnEdgeSeenEnoughTimesIsPredictedFromItsHistory) {
  const RankOne r = TwoRankOneFOneB();
  BubbleEdgePredictor p(r.lowered.programs[1].size(), 500);
  p.SetSimulated(Simulated(r));
  const IdleEdge recv_f0{IdleReason::kRecvWait, 0, r.recv_f0};
  BubbleEdgePredictor::TimePoint t{};
  const int64_t lengths_us[] = {10000, 30000, 20000};
  for (int i = 0; i < kObservedEdges; ++i) {
    EXPECT_DOUBLE_EQ(*p.BudgetUs(recv_f0), 1000) << "after " << i << " bubbles";
    t = Bubble(p, recv_f0, t, lengths_us[i]);
  }
  // mean 10000 -> 15000 -> 16250, deviation 0 -> 5000 -> 5000.
  EXPECT_DOUBLE_EQ(*p.BudgetUs(recv_f0), 11250);
  // A history shorter than the simulator's prediction does not lower it.
  BubbleEdgePredictor short_bubbles(r.lowered.programs[1].size(), 500);
  short_bubbles.SetSimulated(Simulated(r));
  for (int i = 0; i < kObservedEdges; ++i) t = Bubble(short_bubbles, recv_f0, t, 400);
  EXPECT_DOUBLE_EQ(*short_bubbles.BudgetUs(recv_f0), 1000);
}

TEST(BubbleEdgePredictorTest, EdgesOutsideTheProgramArePredictedButNotLearned) {
  const RankOne r = TwoRankOneFOneB();
  BubbleEdgePredictor p(r.lowered.programs[1].size(), 0);
  p.SetSimulated(Simulated(r));
  const int outside = static_cast<int>(r.lowered.programs[1].size()) + 3;
  const IdleEdge edge{IdleReason::kRecvWait, 0, outside};
  BubbleEdgePredictor::TimePoint t{};
  for (int i = 0; i < kObservedEdges + 1; ++i) t = Bubble(p, edge, t, 50000);
  EXPECT_EQ(p.TimesSeen(outside), 0);
  EXPECT_EQ(p.PredictedUs(edge), 0);
}

}  // namespace
}  // namespace pw
