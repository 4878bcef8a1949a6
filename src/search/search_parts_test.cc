// The planner's parts: model profiles and stage splits, lower bounds, the
// Pareto front, and the policy space (search/model_profile.h, bounds.h,
// pareto.h, policy_space.h).
#include <gtest/gtest.h>

#include "dsl/compiler.h"
#include "dsl/expr.h"
#include "schedule/generators.h"
#include "search/bounds.h"
#include "search/family.h"
#include "search/model_profile.h"
#include "search/pareto.h"
#include "search/policy_space.h"
#include "sim/simulator.h"

namespace pw::search {
namespace {

StageCost Cost(double f, double i, double w) {
  StageCost c;
  c.forward = f;
  c.backward_input = i;
  c.backward_weight = w;
  c.backward = i + w;
  return c;
}

CostModel Uniform(double f, double i, double w) {
  CostModel c;
  c.stages = {Cost(f, i, w)};
  return c;
}

TEST(ModelProfileTest, OneEntryDescribesPEqualStagesAndSplitsOverChunks) {
  Result<ModelProfile> profile = MakeModelProfile(Uniform(1, 1, 1), 4, 0);
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  EXPECT_EQ(profile->num_pieces(), 4);
  EXPECT_TRUE(profile->memory_in_microbatches);
  // Interleaved v = 2: eight stages, each half a rank's share.
  Result<StageBounds> bounds = UniformBounds(*profile, 8);
  ASSERT_TRUE(bounds.ok());
  std::vector<StageCost> stages = StageCostsFor(*profile, *bounds);
  ASSERT_EQ(stages.size(), 8u);
  for (const StageCost& c : stages) {
    EXPECT_DOUBLE_EQ(*c.forward, 0.5);
    EXPECT_DOUBLE_EQ(*c.backward, 1.0);
    EXPECT_DOUBLE_EQ(*c.backward_weight, 0.5);
    EXPECT_DOUBLE_EQ(c.activation_bytes, 0.5);  // microbatch shares
  }
}

TEST(ModelProfileTest, PerStageTableIsIntegratedOverEachVirtualStage) {
  CostModel costs;
  costs.stages = {Cost(1, 1, 1), Cost(3, 3, 3)};  // a heavy second half
  costs.stages[1].output_bytes = 7;
  Result<ModelProfile> profile = MakeModelProfile(costs, 2, 0);
  ASSERT_TRUE(profile.ok());
  // Three stages over two pieces: [0, 2/3), [2/3, 4/3), [4/3, 2).
  std::vector<StageCost> stages = StageCostsFor(*profile, *UniformBounds(*profile, 3));
  EXPECT_NEAR(*stages[0].forward, 2.0 / 3, 1e-12);
  EXPECT_NEAR(*stages[1].forward, 1.0 / 3 + 3.0 / 3, 1e-12);
  EXPECT_NEAR(*stages[2].forward, 2.0, 1e-12);
  EXPECT_EQ(stages[1].output_bytes, 7);  // ends inside piece 1
  EXPECT_EQ(stages[0].output_bytes, 0);
}

TEST(ModelProfileTest, LayersAreWholeAndTheRemainderGoesToTheMiddle) {
  Result<ModelProfile> profile = MakeModelProfile(Uniform(1, 1, 1), 4, 10);
  ASSERT_TRUE(profile.ok());
  EXPECT_TRUE(profile->layers);
  Result<StageBounds> bounds = UniformBounds(*profile, 4);
  ASSERT_TRUE(bounds.ok());
  EXPECT_EQ(LayersPerStage(*profile, *bounds), (std::vector<int>{2, 3, 3, 2}));
  EXPECT_FALSE(UniformBounds(*profile, 11).ok());  // more stages than layers
}

TEST(ModelProfileTest, RejectsTablesThatFitNeitherStagesNorLayers) {
  CostModel costs;
  costs.stages = {Cost(1, 1, 1), Cost(1, 1, 1), Cost(1, 1, 1)};
  Result<ModelProfile> profile = MakeModelProfile(costs, 4, 8);
  ASSERT_FALSE(profile.ok());
  EXPECT_NE(profile.status().message().find("one per layer"), std::string::npos) << profile.status().message();
  costs.stages[1].backward_weight = std::nullopt;  // I without W
  costs.stages[1].backward = std::nullopt;
  EXPECT_FALSE(MakeModelProfile(costs, 3, 0).ok());
}

TEST(ModelProfileTest, BalancedBoundsGiveAHeavyLastLayerFewerCompanions) {
  CostModel costs;
  costs.stages.assign(16, Cost(1, 1, 1));
  costs.stages.back() = Cost(5, 5, 5);  // LM head
  Result<ModelProfile> profile = MakeModelProfile(costs, 4, 16);
  ASSERT_TRUE(profile.ok());
  const Placement placement = Placement::Sequential(4).value();
  CostModel base;
  Result<StageBounds> balanced = BalancedBounds(*profile, placement, base, 8, true);
  ASSERT_TRUE(balanced.ok());
  const std::vector<int> layers = LayersPerStage(*profile, *balanced);
  EXPECT_LT(layers.back(), 4);
  const double uniform_bound =
      ComputeBounds(placement, WithStages(base, StageCostsFor(*profile, *UniformBounds(*profile, 4))), 8, true).time;
  const double balanced_bound =
      ComputeBounds(placement, WithStages(base, StageCostsFor(*profile, *balanced)), 8, true).time;
  EXPECT_LT(balanced_bound, uniform_bound * 0.85);
}

// The bound must hold for every schedule of the family: check it against
// every built-in under uneven costs and communication.
TEST(BoundsTest, NoBuiltinBeatsItsFamilyBound) {
  CostModel costs;
  costs.stages = {Cost(2, 1.5, 0.5), Cost(1, 1, 1), Cost(1, 1.2, 0.8), Cost(1.5, 1.5, 1.5)};
  costs.comm_latency = 0.1;
  ModelProfile profile = *MakeModelProfile(costs, 4, 0);
  CostModel base = costs;
  base.stages = {StageCost{}};
  for (const std::string& name : BuiltinScheduleNames()) {
    Result<Schedule> s = GenerateSchedule(name, GeneratorOptions{4, 8, 0});
    ASSERT_TRUE(s.ok()) << name;
    CostModel stage_costs = WithStages(base, StageCostsFor(profile, *UniformBounds(profile, s->num_stages())));
    ASSERT_TRUE(stage_costs.Resolve(*s).ok());
    Result<SimResult> sim = Simulate(*s, stage_costs);
    ASSERT_TRUE(sim.ok());
    const FamilyBounds b = ComputeBounds(s->placement, stage_costs, 8, s->UsesSplitBackward());
    EXPECT_LE(b.time, sim->makespan + 1e-9) << name;
    EXPECT_LE(b.work, b.time) << name;
    double peak = 0;
    for (const RankSimResult& r : sim->ranks) peak = std::max(peak, r.peak_memory);
    EXPECT_LE(b.memory, peak + 1e-9) << name;
  }
}

TEST(BoundsTest, OneFOneBMeetsItsBoundExactly) {
  // head (p-1)F + work m(F+B) + tail (p-1)B = the closed form (m+p-1)(F+B).
  CostModel costs;
  costs.stages = {Cost(1, 1, 1)};
  const Placement placement = Placement::Sequential(4).value();
  const FamilyBounds b = ComputeBounds(placement, costs, 8, false);
  EXPECT_DOUBLE_EQ(b.time, (8 + 4 - 1) * 3.0);
  EXPECT_DOUBLE_EQ(b.work, 24.0);
}

TEST(ParetoTest, KeepsOnlyUndominatedPointsSortedByTime) {
  std::vector<TimeMemoryPoint> pts = {{10, 5}, {12, 4}, {11, 6}, {10, 5}, {15, 1}, {12, 4.5}, {9, 9}};
  std::vector<size_t> front = ParetoFront(pts);
  EXPECT_EQ(front, (std::vector<size_t>{6, 0, 1, 4}));
}

TEST(PolicySpaceTest, PerRankExpressionEvaluatesToTheGivenValues) {
  for (const std::vector<int64_t>& values :
       {std::vector<int64_t>{3, 2, 1, 0}, {5, 5, 5}, {0, 4, 1, 7, 0}, {0, -2, 1, -1}, {2}, {-1, 1, 3}}) {
    const std::string text = PerRankExpression(values);
    Result<dsl::Expr> e = dsl::Expr::Parse(text);
    ASSERT_TRUE(e.ok()) << text;
    for (size_t r = 0; r < values.size(); ++r) {
      dsl::ExprVars vars{.p = static_cast<int64_t>(values.size()), .r = static_cast<int64_t>(r)};
      EXPECT_EQ(*e->Evaluate(vars), values[r]) << text << " at r=" << r;
    }
  }
  EXPECT_EQ(PerRankExpression({3, 2, 1, 0}), "-r + 3");
}

TEST(PolicySpaceTest, EveryStartPointCompilesOrFailsCleanly) {
  ModelProfile profile = *MakeModelProfile(Uniform(1, 1, 1), 4, 0);
  CostModel base;
  std::vector<Family> families = EnumerateFamilies(profile, base, 8, SpaceOptions{});
  EXPECT_EQ(families.size(), 30u);  // 5 placements x fused/split x plain, recompute or offload
  MemoryLimits limits;
  limits.cap = 6;
  limits.static_bytes = {0};
  limits.in_shares = true;
  int compiled = 0;
  for (const Family& f : families) {
    PolicyAxes axes = AxesFor(f, 8, limits);
    ASSERT_FALSE(axes.memories.empty());
    EXPECT_EQ(axes.memories[0].label, "cap");
    // Duplicate warm-ups are gone: on a sequential placement v(p-r)-1 is p-r-1.
    if (f.chunks() == 1) {
      EXPECT_EQ(std::count(axes.warmups.begin(), axes.warmups.end(), "v*(p - r) - 1"), 0);
    }
    for (const PolicyPoint& pt : StartPoints(f, axes, 8)) {
      Result<dsl::PipeProgram> program = ProgramFor(f, axes, pt, 8, "t");
      ASSERT_TRUE(program.ok()) << DescribePolicy(axes, pt);
      dsl::CompileOptions options;
      options.costs = f.costs;
      Result<Schedule> s = dsl::CompilePipeProgram(*program, options);
      // A warm-up too short for the placement deadlocks; that is an answer, not a crash.
      if (!s.ok()) {
        EXPECT_EQ(s.status().code(), StatusCode::kDeadlock) << s.status().ToString();
        continue;
      }
      ++compiled;
      EXPECT_EQ(s->num_stages(), f.num_stages());
      EXPECT_EQ(s->UsesSplitBackward(), f.split_backward);
    }
  }
  EXPECT_GT(compiled, 20);
}

// Every axis reaches its own field of a point and counts its own options.
TEST(PolicySpaceTest, EachAxisNamesItsOwnFieldAndSize) {
  PolicyAxes axes;
  axes.warmups.resize(1);
  axes.deferrals.resize(2);
  axes.priorities.resize(3);
  axes.traversals.resize(4);
  axes.prefixes.resize(5);
  axes.memories.resize(6);
  PolicyPoint point;
  for (int a = 0; a < kNumPolicyAxes; ++a) {
    const auto axis = static_cast<PolicyAxis>(a);
    EXPECT_EQ(AxisSize(axes, axis), a + 1);
    AxisIndex(point, axis) = 10 + a;
  }
  EXPECT_EQ(point.warmup, 10);
  EXPECT_EQ(point.deferral, 11);
  EXPECT_EQ(point.priority, 12);
  EXPECT_EQ(point.traversal, 13);
  EXPECT_EQ(point.prefix, 14);
  EXPECT_EQ(point.memory, 15);
}

// A winning built-in is written as a policy when one compiles to it.
TEST(PolicySpaceTest, FindsThePolicyBehindOneFOneBAndZbH1) {
  ModelProfile profile = *MakeModelProfile(Uniform(1, 1, 1), 4, 0);
  CostModel base;
  for (const char* name : {"1f1b", "zb-h1", "gpipe"}) {
    Schedule s = *GenerateSchedule(name, GeneratorOptions{4, 8, 0});
    Family f = *MakeFamily(profile, base, {.style = dsl::PlacementStyle::kSequential}, s.UsesSplitBackward(), false, 8);
    PolicyAxes axes = AxesFor(f, 8, MemoryLimits{});
    std::optional<dsl::PipeProgram> program = FindEquivalentPolicy(s, f, axes, 8, name);
    ASSERT_TRUE(program.has_value()) << name;
    for (const auto& [rank, seq] : program->pinned) EXPECT_TRUE(seq.prefix_only) << name;  // at most a warm-up
    if (std::string(name) == "1f1b") {
      EXPECT_TRUE(program->pinned.empty());  // B > F, warm-up p - r - 1
    }
    dsl::CompileOptions options;
    options.costs = f.costs;
    EXPECT_EQ(dsl::CompilePipeProgram(*program, options)->programs, s.programs) << name;
  }
  // ZB-V's hand-made order is no policy of the space: nothing is claimed.
  Schedule zbv = *GenerateSchedule("zb-v", GeneratorOptions{4, 8, 0});
  Family f = *MakeFamily(profile, base, {.style = dsl::PlacementStyle::kVShape}, true, false, 8);
  EXPECT_FALSE(FindEquivalentPolicy(zbv, f, AxesFor(f, 8, MemoryLimits{}), 8, "zb-v").has_value());
}

}  // namespace
}  // namespace pw::search
