#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "schedule/list_scheduler.h"

namespace pw {
namespace {

// Hand-written 1F1B for p = 2, m = 3 (stage r on rank r).
Schedule TwoRankOneFOneB() {
  Schedule s = MakeEmptySchedule("1f1b", *Placement::Sequential(2), 3);
  s.programs[0] = {Fwd(0, 0), Fwd(0, 1), Bwd(0, 0), Fwd(0, 2), Bwd(0, 1), Bwd(0, 2)};
  s.programs[1] = {Fwd(1, 0), Bwd(1, 0), Fwd(1, 1), Bwd(1, 1), Fwd(1, 2), Bwd(1, 2)};
  return s;
}

CostModel Uniform(std::string_view spec) {
  CostModel c;
  EXPECT_TRUE(c.ParseUniformCosts(spec).ok());
  return c;
}

TEST(SimulatorTest, OneFOneBMatchesHandComputedTimeline) {
  Schedule s = TwoRankOneFOneB();
  CostModel costs = Uniform("F=1,B=2");
  ASSERT_TRUE(costs.Resolve(s).ok());
  Result<SimResult> r = Simulate(s, costs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // (m + p - 1)(F + B) = 4 * 3.
  EXPECT_DOUBLE_EQ(r->makespan, 12.0);
  EXPECT_DOUBLE_EQ(r->ranks[0].busy, 9.0);
  EXPECT_DOUBLE_EQ(r->ranks[1].busy, 9.0);
  EXPECT_NEAR(r->bubble_ratio, 6.0 / 24.0, 1e-12);
  // Rank 0: F0[0,1] F1[1,2] idle [2,4) until 1B0 ends at 4, B0[4,6] F2[6,7] B1[7,9]
  // wait for 1B2 (ends 10) B2[10,12].
  const auto& spans = r->spans[0];
  EXPECT_DOUBLE_EQ(spans[2].start, 4.0);
  EXPECT_DOUBLE_EQ(spans[5].start, 10.0);
  ASSERT_EQ(r->ranks[0].bubbles.size(), 2u);
  EXPECT_DOUBLE_EQ(r->ranks[0].bubbles[0].start, 2.0);
  EXPECT_DOUBLE_EQ(r->ranks[0].bubbles[0].end, 4.0);
  EXPECT_DOUBLE_EQ(r->ranks[0].bubbles[1].start, 9.0);
  EXPECT_DOUBLE_EQ(r->ranks[0].bubbles[1].end, 10.0);
  // Rank 1 starts at 1 and ends at 10: bubbles [0,1] ... [10,12].
  EXPECT_DOUBLE_EQ(r->ranks[1].bubbles.front().start, 0.0);
  EXPECT_DOUBLE_EQ(r->ranks[1].bubbles.front().end, 1.0);
  EXPECT_DOUBLE_EQ(r->ranks[1].bubbles.back().end, 12.0);
}

// The executor's time between two actions delays each action and counts
// as idle; a split backward (I and W for every B) pays it twice per
// microbatch where the fused one pays it once.
TEST(SimulatorTest, PerActionOverheadDelaysEveryActionAndCountsAsIdle) {
  Schedule fused = MakeEmptySchedule("fused", *Placement::Sequential(1), 2);
  fused.programs[0] = {Fwd(0, 0), Bwd(0, 0), Fwd(0, 1), Bwd(0, 1)};
  Schedule split = MakeEmptySchedule("split", *Placement::Sequential(1), 2);
  split.programs[0] = {Fwd(0, 0), BwdI(0, 0), BwdW(0, 0), Fwd(0, 1), BwdI(0, 1), BwdW(0, 1)};
  CostModel costs = Uniform("F=1,I=1,W=1");
  costs.action_overhead = 0.25;
  ASSERT_TRUE(costs.Resolve(fused).ok());
  Result<SimResult> f = Simulate(fused, costs);
  Result<SimResult> s = Simulate(split, costs);
  ASSERT_TRUE(f.ok() && s.ok());
  EXPECT_DOUBLE_EQ(f->makespan, 2 * 3 + 4 * 0.25);
  EXPECT_DOUBLE_EQ(s->makespan, 2 * 3 + 6 * 0.25);
  EXPECT_DOUBLE_EQ(f->ranks[0].busy, 6.0);
  EXPECT_DOUBLE_EQ(f->spans[0][1].start, 1.5);  // F0 [0.25, 1.25], then 0.25 more
  EXPECT_DOUBLE_EQ(f->spans[0][1].end, 3.5);
  EXPECT_NEAR(f->bubble_ratio, 1.0 / 7.0, 1e-12);
  ASSERT_EQ(f->ranks[0].bubbles.size(), 4u);
  EXPECT_DOUBLE_EQ(f->ranks[0].bubbles[0].end, 0.25);

  costs.action_overhead = -1;
  EXPECT_FALSE(costs.Resolve(fused).ok());
}

TEST(SimulatorTest, CommunicationDelaysCrossRankDependencies) {
  Schedule s = TwoRankOneFOneB();
  CostModel costs = Uniform("F=1,B=2");
  costs.comm_latency = 0.5;
  costs.stages[0].output_bytes = 100;
  costs.comm_bandwidth = 200;  // +0.5 per message
  ASSERT_TRUE(costs.Resolve(s).ok());
  Result<SimResult> r = Simulate(s, costs);
  ASSERT_TRUE(r.ok());
  // 1F0 starts at 1 + 1 = 2; 0B0 at 2+1+2 (1B0 end) + 1 = 6.
  EXPECT_DOUBLE_EQ(r->spans[1][0].start, 2.0);
  EXPECT_DOUBLE_EQ(r->spans[0][2].start, 6.0);
}

TEST(SimulatorTest, MemoryPeaksAndCapViolation) {
  Schedule s = TwoRankOneFOneB();
  CostModel costs = Uniform("F=1,B=2");
  costs.stages[0].activation_bytes = 10;
  costs.static_bytes = {100, 50};
  costs.memory_cap = 115;
  ASSERT_TRUE(costs.Resolve(s).ok());
  Result<SimResult> r = Simulate(s, costs);
  ASSERT_TRUE(r.ok());
  // 1F1B: rank 0 holds p - 0 = 2 microbatches, rank 1 holds 1.
  EXPECT_DOUBLE_EQ(r->ranks[0].peak_memory, 120);
  EXPECT_DOUBLE_EQ(r->ranks[1].peak_memory, 60);
  EXPECT_TRUE(r->ranks[0].memory_cap_violated);
  EXPECT_FALSE(r->ranks[1].memory_cap_violated);
  EXPECT_TRUE(r->memory_cap_violated);
  // Rank 0's first bubble [2,4) holds two microbatches: 120 used, cap - 120 free.
  ASSERT_FALSE(r->ranks[0].bubbles.empty());
  EXPECT_DOUBLE_EQ(r->ranks[0].bubbles[0].memory_used, 120);
  EXPECT_DOUBLE_EQ(*r->ranks[0].bubbles[0].free_memory, -5);
}

TEST(SimulatorTest, SplitBackwardFreesMemoryInTwoParts) {
  Schedule s = MakeEmptySchedule("split", *Placement::Sequential(1), 1);
  s.programs[0] = {Fwd(0, 0), BwdI(0, 0), BwdW(0, 0)};
  CostModel costs = Uniform("F=1,I=1,W=3");
  costs.stages[0].activation_bytes = 8;
  costs.stages[0].freed_by_input = 0.25;
  ASSERT_TRUE(costs.Resolve(s).ok());
  EXPECT_DOUBLE_EQ(*costs.stages[0].backward, 4.0);  // B defaults to I + W
  Result<SimResult> r = Simulate(s, costs);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->makespan, 5.0);
  EXPECT_DOUBLE_EQ(r->ranks[0].peak_memory, 8);
  EXPECT_DOUBLE_EQ(r->bubble_ratio, 0.0);
}

TEST(SimulatorTest, DeadlockIsReportedWithStuckRanks) {
  Schedule s = MakeEmptySchedule("bad", *Placement::Sequential(2), 1);
  s.programs[0] = {Bwd(0, 0), Fwd(0, 0)};  // waits for 1B0, which waits for 0F0
  s.programs[1] = {Fwd(1, 0), Bwd(1, 0)};
  CostModel costs;
  ASSERT_TRUE(costs.Resolve(s).ok());
  Result<SimResult> r = Simulate(s, costs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlock);
  EXPECT_NE(r.status().message().find("rank 0 is stuck at step 0 (0B0)"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("rank 1 is stuck at step 0 (1F0), waiting for F(0,0) on rank 0"),
            std::string::npos)
      << r.status().message();
}

TEST(SimulatorTest, OutOfRangeActionIsAnErrorNotACrash) {
  Schedule s = MakeEmptySchedule("bad", *Placement::Sequential(1), 2);
  s.programs[0] = {Fwd(0, 0), Fwd(0, 7)};
  CostModel costs;
  ASSERT_TRUE(costs.Resolve(s).ok());
  Result<SimResult> r = Simulate(s, costs);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("rank 0, position 1"), std::string::npos) << r.status().message();
}

// ListSchedule checks each action as it comes to run instead of all of them
// first; the error must still be the first bad action in rank order, as the
// full pass (internal::CheckActionRanges) reports it.
TEST(SimulatorTest, RangeErrorIsTheFirstInRankOrderWhateverRunsFirst) {
  Schedule s = MakeEmptySchedule("bad", *Placement::Sequential(2), 2);
  // Rank 1's bad action runs long before rank 0's, which waits behind 0B0.
  s.programs[0] = {Fwd(0, 0), Fwd(0, 1), Bwd(0, 0), Bwd(0, 1), Fwd(0, 9)};
  s.programs[1] = {Fwd(1, 0), Fwd(1, 5), Bwd(1, 0), Fwd(1, 1), Bwd(1, 1)};
  CostModel costs;
  ASSERT_TRUE(costs.Resolve(s).ok());
  Result<SimResult> r = Simulate(s, costs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), internal::CheckActionRanges(s).message());
  EXPECT_NE(r.status().message().find("rank 0, position 4"), std::string::npos) << r.status().message();
}

TEST(SimulatorTest, RangeErrorBehindADeadlockIsStillTheError) {
  Schedule s = MakeEmptySchedule("bad", *Placement::Sequential(2), 1);
  s.programs[0] = {Bwd(0, 0), Fwd(0, 0)};
  s.programs[1] = {Fwd(1, 0), Bwd(1, 0), {1, 0, ActionKind::kBackward}, {0, 0, ActionKind::kForward}};
  CostModel costs;
  ASSERT_TRUE(costs.Resolve(s).ok());
  Result<SimResult> r = Simulate(s, costs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("rank 1, position 3"), std::string::npos) << r.status().message();
}

// The simulator reads the time and memory change of F, B, I and W from
// per-stage tables; they must equal CostModel::Duration and the memory rule
// exactly (bit for bit), with per-stage costs and uneven rank speeds.
TEST(SimulatorTest, ComputeTablesMatchTheCostModelExactly) {
  for (const bool split : {false, true}) {
    const int p = 3, m = 5;
    Schedule s = MakeEmptySchedule("tables", *Placement::Sequential(p), m);
    for (RankId r = 0; r < p; ++r) {
      for (MicrobatchId mb = 0; mb < m; ++mb) s.programs[r].push_back(Fwd(r, mb));
      for (MicrobatchId mb = 0; mb < m; ++mb) {
        if (split) {
          s.programs[r].push_back(BwdI(r, mb));
        } else {
          s.programs[r].push_back(Bwd(r, mb));
        }
      }
      if (split) {
        for (MicrobatchId mb = 0; mb < m; ++mb) s.programs[r].push_back(BwdW(r, mb));
      }
    }
    CostModel costs;
    costs.stages.assign(p, StageCost{});
    for (int st = 0; st < p; ++st) {
      costs.stages[st].forward = 0.1 * (st + 1) + 1.0 / 3;
      costs.stages[st].backward_input = 0.7 / (st + 1);
      costs.stages[st].backward_weight = 0.3 + st / 7.0;
      costs.stages[st].activation_bytes = 1e6 / 3 + st;
      costs.stages[st].freed_by_input = 0.37;
    }
    costs.cluster.rank_speed = {1.0, 0.7, 1.3};
    ASSERT_TRUE(costs.Resolve(s).ok());
    Result<SimResult> r = Simulate(s, costs);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    for (RankId rank = 0; rank < p; ++rank) {
      const StageCost& c = costs.Stage(rank);
      double memory = costs.StaticBytes(rank), peak = memory;
      for (size_t i = 0; i < s.programs[rank].size(); ++i) {
        const Action& a = s.programs[rank][i];
        const ActionSpan& span = r->spans[rank][i];
        EXPECT_EQ(span.end, span.start + costs.Duration(rank, a, s.kinds)) << s.ActionName(a);
        switch (a.kind) {
          case ActionKind::kForward: memory += c.activation_bytes; break;
          case ActionKind::kBackward: memory += -c.activation_bytes; break;
          case ActionKind::kBackwardInput: memory += -c.activation_bytes * c.freed_by_input; break;
          default: memory += -c.activation_bytes * (1 - c.freed_by_input); break;
        }
        peak = std::max(peak, memory);
      }
      EXPECT_EQ(r->ranks[rank].peak_memory, peak) << "rank " << rank;
    }
  }
}

TEST(SimulatorTest, UserKindsFollowTheirRules) {
  Schedule s = MakeEmptySchedule("offload", *Placement::Sequential(1), 1);
  KindInfo offload{.name = "OFFLOAD", .default_cost = 0.5, .memory_delta_fraction = -1.0,
                   .after = {ActionKind::kForward}};
  KindInfo reload{.name = "RELOAD", .default_cost = 0.25, .memory_delta_fraction = 1.0,
                  .before = {ActionKind::kBackward}};
  ActionKind off = *s.kinds.Register(offload);
  ActionKind rel = *s.kinds.Register(reload);
  s.programs[0] = {Fwd(0, 0), {0, 0, off}, {0, 0, rel}, Bwd(0, 0)};
  CostModel costs = Uniform("F=1,B=2");
  costs.stages[0].activation_bytes = 4;
  ASSERT_TRUE(costs.Resolve(s).ok());
  Result<SimResult> r = Simulate(s, costs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->makespan, 3.75);
  EXPECT_DOUBLE_EQ(r->ranks[0].peak_memory, 4);
}

// With a host link, OFFLOAD and RELOAD cost the bytes they move over it
// (4 bytes at 8 per unit: 0.5 each), not their declared cost, and a slow
// rank does not slow the link; a kind_costs entry still wins.
TEST(SimulatorTest, OffloadAndReloadFollowTheHostLink) {
  Schedule s = MakeEmptySchedule("offload", *Placement::Sequential(1), 1);
  ActionKind off = *s.kinds.Register(KindInfo{.name = "OFFLOAD", .default_cost = 3, .memory_delta_fraction = -1.0,
                                              .after = {ActionKind::kForward}});
  ActionKind rel = *s.kinds.Register(KindInfo{.name = "RELOAD", .default_cost = 3, .memory_delta_fraction = 1.0,
                                              .before = {ActionKind::kBackward}});
  s.programs[0] = {Fwd(0, 0), {0, 0, off}, {0, 0, rel}, Bwd(0, 0)};
  CostModel costs = Uniform("F=1,B=2");
  costs.stages[0].activation_bytes = 4;
  costs.host_bandwidth = 8;
  costs.cluster.rank_speed = {0.5};
  ASSERT_TRUE(costs.Resolve(s).ok());
  EXPECT_DOUBLE_EQ(costs.Duration(0, {0, 0, off}, s.kinds), 0.5);
  Result<SimResult> r = Simulate(s, costs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->makespan, 2 + 0.5 + 0.5 + 4);
  costs.kind_costs["RELOAD"] = 0.25;
  EXPECT_DOUBLE_EQ(costs.Duration(0, {0, 0, rel}, s.kinds), 0.25);
  costs.host_bandwidth = 0;
  const Status refused = costs.Resolve(s);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("--host-bandwidth"), std::string::npos) << refused.ToString();
}

// One stage, two microbatches, the first recomputed: its RECOMPUTE takes
// the stage's measured recompute time (not F), its I and W their
// after-recompute times; the second microbatch's backward keeps the plain
// times. A schedule without RECOMPUTE never sees the after-recompute times.
TEST(SimulatorTest, RecomputedMicrobatchesTakeTheirOwnBackwardTimes) {
  Schedule s = MakeEmptySchedule("recompute", *Placement::Sequential(1), 2);
  ActionKind drop = *s.kinds.Register(KindInfo{.name = "DROP", .memory_delta_fraction = -1.0,
                                               .after = {ActionKind::kForward}});
  ActionKind recompute = *s.kinds.Register(KindInfo{.name = "RECOMPUTE", .memory_delta_fraction = 1.0,
                                                    .after = {drop}, .before = {ActionKind::kBackwardInput}});
  s.programs[0] = {Fwd(0, 0), {0, 0, drop}, Fwd(0, 1), {0, 0, recompute}, BwdI(0, 0), BwdW(0, 0),
                   BwdI(0, 1), BwdW(0, 1)};
  CostModel costs = Uniform("F=1,I=2,W=3");
  costs.stages[0].recompute = 0.5;
  costs.stages[0].backward_input_after_recompute = 1.5;
  costs.stages[0].backward_weight_after_recompute = 2;
  costs.cluster.rank_speed = {0.5};  // a slow rank takes twice every time
  ASSERT_TRUE(costs.Resolve(s).ok());
  EXPECT_DOUBLE_EQ(*costs.stages[0].backward_after_recompute, 3.5);
  EXPECT_DOUBLE_EQ(costs.DurationAfterRecompute(0, BwdW(0, 0), s.kinds), 4);
  EXPECT_DOUBLE_EQ(costs.DurationAfterRecompute(0, Fwd(0, 0), s.kinds), 2);
  Result<SimResult> r = Simulate(s, costs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->makespan, 2 * (1 + 1 + 0.5 + 1.5 + 2 + 2 + 3));

  Schedule plain = MakeEmptySchedule("plain", *Placement::Sequential(1), 2);
  plain.programs[0] = {Fwd(0, 0), Fwd(0, 1), BwdI(0, 0), BwdW(0, 0), BwdI(0, 1), BwdW(0, 1)};
  ASSERT_TRUE(costs.Resolve(plain).ok());
  r = Simulate(plain, costs);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->makespan, 2 * (1 + 1 + 2 + 3 + 2 + 3));
}

// The after-recompute backward resolves among itself like B, I and W: a
// lone B splits as the stage's own backward does; one of I and W alone is
// an error that names the keys.
TEST(CostModelTest, AfterRecomputeBackwardResolvesLikeTheBackward) {
  Schedule s = MakeEmptySchedule("x", *Placement::Sequential(1), 1);
  CostModel c = Uniform("F=1,I=1,W=3");
  c.stages[0].backward_after_recompute = 2;
  ASSERT_TRUE(c.Resolve(s).ok());
  EXPECT_DOUBLE_EQ(*c.stages[0].backward_input_after_recompute, 0.5);
  EXPECT_DOUBLE_EQ(*c.stages[0].backward_weight_after_recompute, 1.5);
  EXPECT_FALSE(c.stages[0].recompute.has_value());

  CostModel half = Uniform("F=1,B=2");
  half.stages[0].backward_input_after_recompute = 1;
  const Status st = half.Resolve(s);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("W_after_recompute"), std::string::npos) << st.ToString();

  CostModel negative = Uniform("F=1,B=2");
  negative.stages[0].recompute = -1;
  EXPECT_FALSE(negative.Resolve(s).ok());
}

TEST(CostModelTest, ParsesAndResolvesDefaults) {
  CostModel c;
  EXPECT_TRUE(c.ParseUniformCosts("F=1, I=2 ,W=0.5").ok());
  Schedule s = MakeEmptySchedule("x", *Placement::Sequential(2), 1);
  ASSERT_TRUE(c.Resolve(s).ok());
  EXPECT_DOUBLE_EQ(*c.stages[0].backward, 2.5);
  CostModel only_b;
  EXPECT_TRUE(only_b.ParseUniformCosts("B=3").ok());
  ASSERT_TRUE(only_b.Resolve(s).ok());
  EXPECT_DOUBLE_EQ(*only_b.stages[0].forward, 1.0);
  EXPECT_DOUBLE_EQ(*only_b.stages[0].backward_input, 1.5);
}

TEST(CostModelTest, BadSpecsAreErrorsThatNameTheItem) {
  for (const char* bad : {"F", "F=-1", "F=abc", "=3", "", "F=1,,", "F=nan"}) {
    CostModel c;
    Status st = c.ParseUniformCosts(bad);
    EXPECT_FALSE(st.ok()) << bad;
  }
  CostModel c;
  EXPECT_TRUE(c.ParseUniformCosts("F=1,NOPE=2").ok());
  Schedule s = MakeEmptySchedule("x", *Placement::Sequential(2), 1);
  Status st = c.Resolve(s);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("NOPE"), std::string::npos);
  CostModel half;
  EXPECT_TRUE(half.ParseUniformCosts("I=1").ok());
  EXPECT_FALSE(half.Resolve(s).ok());
}

}  // namespace
}  // namespace pw
