// MeasureActionOverheads on hand-built timelines whose overheads are known.
#include <gtest/gtest.h>

#include "runtime/action_overheads.h"

namespace pw {
namespace {

TimelineSpan Span(ActionKind kind, int stage, int mb, int64_t step, double start_ms, double dur_ms) {
  TimelineSpan s;
  s.kind = kind;
  s.stage = stage;
  s.microbatch = mb;
  s.step = step;
  s.step_origin_us = 1e6 * static_cast<double>(step);
  s.start_us = 1000 * start_ms;
  s.dur_us = 1000 * dur_ms;
  return s;
}

// Two ranks, one microbatch per step. Rank 0: F(0) 0-10, SEND_F 10-12,
// RECV_B waits 12-40, B(0) 40-60, OPT. Rank 1: RECV_F waits 0-13 (the
// activation leaves F(0) at 10: 3 ms on the link with RECV's 0 fixed part),
// F(1) 13-23, B(1) 23-38, SEND_B 38-39, OPT.
std::vector<std::vector<TimelineSpan>> TwoRanks(int steps, double rank0_opt_ms, double rank1_opt_ms) {
  std::vector<std::vector<TimelineSpan>> ranks(2);
  for (int64_t step = 0; step < steps; ++step) {
    ranks[0].push_back(Span(ActionKind::kForward, 0, 0, step, 0, 10));
    ranks[0].push_back(Span(ActionKind::kSendForward, 0, 0, step, 10, 2));
    ranks[0].push_back(Span(ActionKind::kRecvBackward, 0, 0, step, 12, 28));
    ranks[0].push_back(Span(ActionKind::kBackward, 0, 0, step, 40, 20));
    ranks[0].push_back(Span(ActionKind::kOptimizer, 0, kNoMicrobatch, step, 60, rank0_opt_ms));
    ranks[1].push_back(Span(ActionKind::kRecvForward, 1, 0, step, 0, 13));
    ranks[1].push_back(Span(ActionKind::kForward, 1, 0, step, 13, 10));
    ranks[1].push_back(Span(ActionKind::kBackward, 1, 0, step, 23, 15));
    ranks[1].push_back(Span(ActionKind::kSendBackward, 1, 0, step, 38, 1));
    ranks[1].push_back(Span(ActionKind::kOptimizer, 1, kNoMicrobatch, step, 39, rank1_opt_ms));
  }
  return ranks;
}

TEST(ActionOverheads, MeasuresSendsOptimizerAndTheLink) {
  const ActionOverheads o = MeasureActionOverheads(TwoRanks(3, 5, 26), /*from_step=*/1);
  EXPECT_DOUBLE_EQ(o.kind_costs.at("SEND_F"), 2);
  EXPECT_DOUBLE_EQ(o.kind_costs.at("SEND_B"), 1);
  // Both receives waited, so their shortest duration is their fixed part here.
  EXPECT_DOUBLE_EQ(o.kind_costs.at("RECV_F"), 13);
  EXPECT_DOUBLE_EQ(o.kind_costs.at("RECV_B"), 28);
  // The rank that reaches OPT last (rank 0, 5 ms) waits least: its time.
  EXPECT_DOUBLE_EQ(o.kind_costs.at("OPT"), 5);
  EXPECT_EQ(o.kind_costs.count("REDUCE_GRAD"), 0u);  // never ran
  // Receives waiting before their data existed: RECV_F ends 3 ms after F(0)
  // ends, RECV_B 2 ms after B(1); minus their fixed parts, clamped at 0.
  EXPECT_EQ(o.latency_samples, 4);
  EXPECT_DOUBLE_EQ(o.link_latency_ms, 0);
}

TEST(ActionOverheads, TheLinkIsWhatAReceiveWaitsBeyondItsProducer) {
  auto ranks = TwoRanks(2, 5, 5);
  // A short receive in step 1 shows the fixed part (0.5 ms): the 10th percentile.
  for (int i = 0; i < 9; ++i) ranks[1].push_back(Span(ActionKind::kRecvForward, 1, 1 + i, 1, 50, 0.5));
  const ActionOverheads o = MeasureActionOverheads(ranks, 1);
  EXPECT_DOUBLE_EQ(o.kind_costs.at("RECV_F"), 0.5);
  // Step 1's RECV_F(1, mb 0) waited from 0 to 13, F(0) ended at 10: 3 - 0.5.
  EXPECT_EQ(o.latency_samples, 2);  // and RECV_B(0): 40 - 38 - 28 clamps to 0
  EXPECT_DOUBLE_EQ(o.link_latency_ms, 2.5);  // the upper of the two (nearest rank)

  CostModel costs;
  AddActionOverheads(o, costs);
  EXPECT_DOUBLE_EQ(costs.comm_latency, 2.5);
  EXPECT_DOUBLE_EQ(costs.kind_costs.at("SEND_F"), 2);
}

// Shifts the i-th span of each rank's step by i x `gap_ms`: the executor
// spends `gap_ms` between two actions.
void SpreadActions(std::vector<std::vector<TimelineSpan>>& ranks, double gap_ms) {
  for (auto& spans : ranks) {
    int64_t step = -1;
    int i = 0;
    for (TimelineSpan& s : spans) {
      i = s.step == step ? i + 1 : 0;
      step = s.step;
      s.start_us += 1000 * gap_ms * i;
    }
  }
}

TEST(ActionOverheads, ThePerActionOverheadIsTheMedianGapBetweenAStepsActions) {
  auto ranks = TwoRanks(3, 5, 5);
  SpreadActions(ranks, 0.25);
  ranks[1].back().start_us += 80e3;  // one long pause does not move the median
  const ActionOverheads o = MeasureActionOverheads(ranks, 1);
  EXPECT_EQ(o.action_overhead_samples, 2 * 2 * 4);  // 2 steps x 2 ranks x 4 gaps; none across steps
  EXPECT_DOUBLE_EQ(o.action_overhead_ms, 0.25);
  CostModel costs;
  AddActionOverheads(o, costs);
  EXPECT_DOUBLE_EQ(costs.action_overhead, 0.25);

  const ActionOverheads tight = MeasureActionOverheads(TwoRanks(3, 5, 5), 1);
  EXPECT_EQ(tight.action_overhead_samples, 16);
  EXPECT_DOUBLE_EQ(tight.action_overhead_ms, 0);
}

TEST(ActionOverheads, WarmUpStepsAreLeftOut) {
  auto ranks = TwoRanks(2, 5, 5);
  ranks[0][1].dur_us = 500e3;  // step 0's SEND_F: 500 ms
  EXPECT_DOUBLE_EQ(MeasureActionOverheads(ranks, 1).kind_costs.at("SEND_F"), 2);
  const ActionOverheads none = MeasureActionOverheads(ranks, 5);
  EXPECT_TRUE(none.kind_costs.empty());
  EXPECT_EQ(none.latency_samples, 0);
  EXPECT_EQ(none.action_overhead_samples, 0);
  CostModel costs;
  costs.action_overhead = 0.125;
  AddActionOverheads(none, costs);
  EXPECT_DOUBLE_EQ(costs.action_overhead, 0.125);  // no samples: left as it was
}

}  // namespace
}  // namespace pw
