// Plan (search/planner.h): what the issue asks the automated scheduler to
// hold. With uniform costs it is never worse than the best built-in under
// the same memory cap; on uneven models (LM head, embedding, encoder front,
// per-layer costs) and under a tight cap it is strictly faster, by margins
// set about half-way below what was measured (docs/planner.md has the
// table). Plus: the winner round-trips through a .pipe file, the search is
// deterministic, budgets and errors behave.
#include "search/planner.h"

#include <gtest/gtest.h>

#include <limits>

#include <functional>

#include "dsl/compiler.h"
#include "dsl/parser.h"
#include "schedule/validator.h"

namespace pw::search {
namespace {

StageCost Cost(double f, double i, double w) {
  StageCost c;
  c.forward = f;
  c.backward_input = i;
  c.backward_weight = w;
  return c;
}

// A request whose search finishes well inside its time limit, so that the
// result does not depend on the machine.
PlanRequest Request(int p, int m, std::vector<StageCost> stages, std::optional<double> cap = std::nullopt) {
  PlanRequest req;
  req.ranks = p;
  req.microbatches = m;
  req.costs.stages = std::move(stages);
  req.memory_cap = cap;
  req.time_limit_s = 60;
  return req;
}

std::vector<StageCost> PerStage(int n, const std::function<StageCost(int)>& cost) {
  std::vector<StageCost> out;
  for (int s = 0; s < n; ++s) out.push_back(cost(s));
  return out;
}

PlanResult MustPlan(const PlanRequest& req) {
  Result<PlanResult> r = Plan(req);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  EXPECT_FALSE(r->stats.timed_out) << "the search hit its limit; the result would depend on the machine";
  return std::move(*r);
}

// Checks what every plan must satisfy and returns best / best built-in.
double RatioToBuiltin(const PlanResult& r) {
  const CandidateSummary& best = r.best.summary;
  EXPECT_TRUE(best.fits);
  if (r.memory_cap) {
    for (const RankSimResult& rank : r.best.sim.ranks) EXPECT_LE(rank.peak_memory, *r.memory_cap + 1e-9);
  }
  EXPECT_LE(r.lower_bound, best.makespan + 1e-9);
  EXPECT_LE(best.lower_bound, best.makespan + 1e-9);
  EXPECT_NEAR(r.best.sim.makespan, best.makespan, 1e-9);  // the materialized schedule is the one evaluated
  EXPECT_TRUE(ValidateSchedule(r.best.schedule).ok());
  if (!r.best_builtin) {
    ADD_FAILURE() << "no built-in fits; the comparison is empty";
    return 0;
  }
  return best.makespan / r.best_builtin->makespan;
}

TEST(PlannerTest, UniformCostsMatchOrBeatTheBestBuiltin) {
  struct Case {
    int p, m;
    std::optional<double> cap;  // microbatch shares (no activation bytes given)
  };
  for (const Case& c : {Case{4, 8, std::nullopt}, Case{4, 8, 4.0}, Case{8, 16, std::nullopt}, Case{8, 16, 8.0}}) {
    SCOPED_TRACE("p=" + std::to_string(c.p) + " m=" + std::to_string(c.m));
    PlanResult r = MustPlan(Request(c.p, c.m, {Cost(1, 1, 1)}, c.cap));
    EXPECT_LE(RatioToBuiltin(r), 1.0);
  }
}

// A heavier last stage: the LM head (1.5x). Measured: 7.6% faster than the
// best built-in (interleaved-1f1b v=4) without a cap, 13.1% faster than ZB-V
// under a cap of p microbatches.
TEST(PlannerTest, LmHeadIsStrictlyFaster) {
  auto lm_head = [](int s) { return s == 7 ? Cost(1.5, 1.5, 1.5) : Cost(1, 1, 1); };
  EXPECT_LT(RatioToBuiltin(MustPlan(Request(8, 16, PerStage(8, lm_head)))), 0.96);
  EXPECT_LT(RatioToBuiltin(MustPlan(Request(8, 16, PerStage(8, lm_head), 8.0))), 0.92);
}

// A heavier first stage: the embedding (1.5x). Measured 6.3%.
TEST(PlannerTest, EmbeddingIsStrictlyFaster) {
  auto embedding = [](int s) { return s == 0 ? Cost(1.5, 1.5, 1.5) : Cost(1, 1, 1); };
  EXPECT_LT(RatioToBuiltin(MustPlan(Request(8, 16, PerStage(8, embedding)))), 0.97);
}

// A heterogeneous front stage (an encoder): 2x the forward and another I:W
// ratio. Measured 4.7%.
TEST(PlannerTest, EncoderFrontIsStrictlyFaster) {
  auto encoder = [](int s) { return s == 0 ? Cost(2, 1.5, 0.5) : Cost(1, 1, 1); };
  EXPECT_LT(RatioToBuiltin(MustPlan(Request(8, 16, PerStage(8, encoder)))), 0.98);
}

// A tight cap: p microbatches per rank, which only the 1F1B-memory
// built-ins (1f1b, zb-h1, zb-v) meet. Measured 3.5% faster than ZB-V.
TEST(PlannerTest, TightMemoryCapIsStrictlyFaster) {
  PlanResult r = MustPlan(Request(8, 16, {Cost(1, 1, 1)}, 8.0));
  EXPECT_LT(RatioToBuiltin(r), 0.98);
  ASSERT_TRUE(r.best_builtin);
  EXPECT_EQ(r.best_builtin->name, "zb-v");
  for (const CandidateSummary& b : r.builtins) {
    if (b.name == "zb-h2" || b.name == "gpipe" || b.name.starts_with("interleaved")) {
      EXPECT_FALSE(b.fits) << b.name;
    }
  }
}

// Per-layer costs: 32 layers, the last one 3x (the LM head). Built-ins get
// 4 layers per stage; the planner moves boundaries. Measured 17.5%.
TEST(PlannerTest, ChoosingStageBoundariesBeatsUniformLayers) {
  PlanRequest req = Request(8, 16, PerStage(32, [](int l) { return l == 31 ? Cost(3, 3, 3) : Cost(1, 1, 1); }));
  req.num_layers = 32;
  PlanResult r = MustPlan(req);
  EXPECT_LT(RatioToBuiltin(r), 0.90);
  ASSERT_FALSE(r.best.summary.layers_per_stage.empty());
  int layers = 0;
  for (int n : r.best.summary.layers_per_stage) layers += n;
  EXPECT_EQ(layers, 32);
  EXPECT_LT(r.best.summary.layers_per_stage.back(), 4);  // the head's stage is lighter
}

// The best plan keeps every rank within a cap of 2 by taking each F's
// activations away with `away` and back with `back` (its family says
// `tag`), and its .pipe declares both kinds.
void ExpectCapOfTwoMetBy(const PlanResult& r, const std::string& tag, const std::string& away,
                         const std::string& back) {
  EXPECT_TRUE(r.best.summary.fits);
  EXPECT_NE(r.best.summary.family.find(tag), std::string::npos) << r.best.summary.family;
  for (const RankSimResult& rank : r.best.sim.ranks) EXPECT_LE(rank.peak_memory, 2.0 + 1e-9);
  const std::string text = dsl::FormatPipeProgram(r.best.program);
  EXPECT_NE(text.find("kind " + away + " memory=-1 after=F"), std::string::npos) << text;
  EXPECT_NE(text.find("kind " + back + " memory=1 after=" + away + " before=I"), std::string::npos) << text;
}

// A cap of 2 microbatches on p = 8: no built-in fits, and without
// recomputation a policy must keep ranks from warming up. Dropping each F's
// activations and recomputing them before the backward costs one more F
// per microbatch but lets every rank run 1F1B's warm-up: faster.
TEST(PlannerTest, ATightCapIsMetByRecomputation) {
  PlanRequest req = Request(8, 32, {Cost(1, 1, 1)}, 2.0);
  PlanResult with = MustPlan(req);
  ExpectCapOfTwoMetBy(with, "recompute", "DROP", "RECOMPUTE");
  req.space.recompute = false;
  PlanResult without = MustPlan(req);
  EXPECT_LT(with.best.summary.makespan, 0.95 * without.best.summary.makespan);
  // Without a cap recomputation never wins.
  PlanResult uncapped = MustPlan(Request(8, 32, {Cost(1, 1, 1)}));
  EXPECT_EQ(uncapped.best.summary.family.find("recompute"), std::string::npos);
}

// Recomputation measured by a profile of a recomputing run: a RECOMPUTE
// cheaper than F and a backward that runs faster after it price the capped
// plan below the same plan priced with RECOMPUTE = F, and every lower bound
// still holds (bounds take the faster backward).
TEST(PlannerTest, MeasuredRecomputationTimesPriceTheCappedPlan) {
  PlanRequest req = Request(8, 32, {Cost(1, 1, 1)}, 2.0);
  const PlanResult as_f = MustPlan(req);
  StageCost measured = Cost(1, 1, 1);
  measured.recompute = 0.5;
  measured.backward_input_after_recompute = 0.5;
  measured.backward_weight_after_recompute = 0.5;
  req.costs.stages = {measured};
  const PlanResult priced = MustPlan(req);
  ExpectCapOfTwoMetBy(priced, "recompute", "DROP", "RECOMPUTE");
  // Recomputing every microbatch now costs less than F + I + W per microbatch: faster than without.
  EXPECT_LT(priced.best.summary.makespan, 0.9 * as_f.best.summary.makespan);
  EXPECT_LE(priced.lower_bound, priced.best.summary.makespan + 1e-9);
  for (const CandidateSummary& c : priced.evaluated) EXPECT_LE(c.lower_bound, c.makespan + 1e-9) << c.family;
}

// The same cap with activation bytes and a host link: moving a microbatch's
// activations out and back (0.25 + 0.25 at 4 bytes per unit) is cheaper
// than recomputing its F (1), so offload wins; over a slow link (2 + 2)
// recomputation does. Without a host link offload is not tried.
TEST(PlannerTest, UnderACapOffloadWinsOverAFastHostLinkOnly) {
  StageCost stage = Cost(1, 1, 1);
  stage.activation_bytes = 1;
  PlanRequest req = Request(8, 32, {stage}, 2.0);
  req.costs.host_bandwidth = 4;
  PlanResult fast = MustPlan(req);
  ExpectCapOfTwoMetBy(fast, "offload", "OFFLOAD", "RELOAD");
  req.costs.host_bandwidth = 0.5;
  PlanResult slow = MustPlan(req);
  EXPECT_NE(slow.best.summary.family.find("recompute"), std::string::npos) << slow.best.summary.family;
  EXPECT_LT(fast.best.summary.makespan, slow.best.summary.makespan);
  req.costs.host_bandwidth = std::numeric_limits<double>::infinity();
  EXPECT_EQ(MustPlan(req).best.summary.family.find("offload"), std::string::npos);
}

// A task whose step is one forward: the fastest schedule (interleaved v=4,
// chunks of a quarter) leaves only bubbles shorter than that, which hold no
// step; the harvest pick trades some training time for bubbles long enough
// to hold steps, and only for a positive net gain (measured with margin 1,
// every whole step counted: 27 against 24.75, 12 of task time per step,
// net +3).
TEST(PlannerTest, ASideTaskProfileScoresWholeStepsAgainstTrainingTime) {
  PlanRequest req = Request(4, 8, {Cost(1, 1, 1)});
  req.side_task = SideTaskProfile{1, 0, 1.0};
  PlanResult r = MustPlan(req);
  ASSERT_TRUE(r.harvest_pick.has_value());
  const CandidateSummary& pick = r.harvest_pick->summary;
  const CandidateSummary& best = r.best.summary;
  EXPECT_GE(pick.net_gain, best.net_gain);
  EXPECT_GT(pick.side_work, best.side_work);
  EXPECT_GT(pick.net_gain, 0);
  EXPECT_NEAR(pick.net_gain, pick.side_work - 4 * (pick.makespan - best.makespan), 1e-9);
  // The pick's side work is what its simulated bubbles hold.
  EXPECT_NEAR(SideWork(r.harvest_pick->sim, *req.side_task).total, pick.side_work, 1e-9);
  ASSERT_FALSE(r.harvest_top.empty());
  for (size_t i = 1; i < r.harvest_top.size(); ++i) {
    EXPECT_GE(r.harvest_top[i - 1].net_gain + 1e-9, r.harvest_top[i].net_gain);
  }
  // Without a profile: no pick.
  req.side_task.reset();
  EXPECT_FALSE(MustPlan(req).harvest_pick.has_value());
}

// One rank 1.5x slower: the built-ins' equal stages wait for it; the plan
// gives it fewer layers (measured: 26 % saved, at the bound).
TEST(PlannerTest, ASlowRankGetsFewerLayers) {
  PlanRequest req = Request(4, 16, {Cost(1, 1, 1)});
  req.num_layers = 32;
  req.costs.cluster.rank_speed = {1, 1, 1, 0.667};
  PlanResult r = MustPlan(req);
  EXPECT_LT(RatioToBuiltin(r), 0.85);
  // Whatever the placement, rank 3 holds fewer layers than any other rank.
  std::vector<int> layers_of_rank(4, 0);
  const Placement& placement = r.best.schedule.placement;
  for (int s = 0; s < placement.num_stages(); ++s) {
    layers_of_rank[placement.RankOf(s)] += r.best.summary.layers_per_stage[s];
  }
  for (int rank = 0; rank < 3; ++rank) EXPECT_LT(layers_of_rank[3], layers_of_rank[rank]);
}

// Two sites whose ranks are numbered alternately, joined by a slow link:
// every built-in crosses it at each stage boundary; the plan runs its
// placement over the ranks grouped by site (measured: 23 % saved).
TEST(PlannerTest, RanksOfASiteAreKeptTogether) {
  PlanRequest req = Request(4, 16, {Cost(10, 10, 10)});
  req.num_layers = 16;
  req.costs.stages[0].output_bytes = 4e6;
  req.costs.cluster.site_of_rank = {0, 1, 0, 1};
  req.costs.cluster.cross_site_latency = 20;
  req.costs.cluster.cross_site_bandwidth = 125000;
  PlanResult r = MustPlan(req);
  EXPECT_LT(RatioToBuiltin(r), 0.90);
  const Placement& placement = r.best.schedule.placement;
  int crossings = 0;
  for (int s = 1; s < placement.num_stages(); ++s) {
    crossings += req.costs.cluster.SameSite(placement.RankOf(s - 1), placement.RankOf(s)) ? 0 : 1;
  }
  EXPECT_LE(crossings, 2) << r.best.summary.family;
  EXPECT_NE(r.best.summary.family.find("over ranks 0,2,1,3"), std::string::npos) << r.best.summary.family;
  // The written program keeps the placement.
  const std::string text = dsl::FormatPipeProgram(r.best.program);
  EXPECT_NE(text.find("placement explicit"), std::string::npos) << text;
}

// The loop: a profile of a 4-layer model on 2 ranks, the last stage
// much slower. Interleaved v=4 (8 stages) would win on stage costs cut into
// fractions, but the model has 4 blocks: every candidate, and the written
// program, must split it between whole layers into at most 4 stages.
TEST(PlannerTest, FewLayersLimitTheStagesAndEveryCandidateSplitsWholeLayers) {
  PlanRequest req = Request(2, 8, {Cost(2, 1.5, 1.5), Cost(1, 1, 1), Cost(1, 1, 1), Cost(1, 30, 30)});
  req.num_layers = 4;
  PlanResult r = MustPlan(req);
  ASSERT_FALSE(r.evaluated.empty());
  for (const CandidateSummary& c : r.evaluated) {
    EXPECT_LE(c.num_stages, 4) << c.family;
    ASSERT_EQ(static_cast<int>(c.layers_per_stage.size()), c.num_stages) << c.family;
    int sum = 0;
    for (int n : c.layers_per_stage) {
      EXPECT_GE(n, 1) << c.family;
      sum += n;
    }
    EXPECT_EQ(sum, 4) << c.family;
  }
  EXPECT_EQ(r.best.program.layers_per_stage, r.best.summary.layers_per_stage);
  EXPECT_EQ(static_cast<int>(r.best.program.layers_per_stage.size()), r.best.schedule.num_stages());
  // The directive survives the file.
  Result<dsl::PipeProgram> parsed = dsl::ParsePipeProgram(dsl::FormatPipeProgram(r.best.program), "best.pipe");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->layers_per_stage, r.best.summary.layers_per_stage);
  // Without layers the program says nothing about a split.
  EXPECT_TRUE(MustPlan(Request(2, 8, {Cost(1, 1, 1)})).best.program.layers_per_stage.empty());
}

// p = 32, m = 128: seconds, not minutes (measured about 0.3 s on one core).
TEST(PlannerTest, ThirtyTwoRanksPlanInSeconds) {
  PlanResult r = MustPlan(Request(32, 128, {Cost(1, 1, 1)}, 32.0));
  EXPECT_LE(RatioToBuiltin(r), 1.0);
  EXPECT_LT(r.stats.seconds, 10.0);
}

TEST(PlannerTest, TheWinnerRoundTripsThroughAPipeFile) {
  for (bool policies : {true, false}) {
    PlanRequest req = Request(4, 8, PerStage(4, [](int s) { return s == 3 ? Cost(1.5, 1.5, 1.5) : Cost(1, 1, 1); }), 4.0);
    req.space.policies = policies;  // without policies a built-in wins: pinned programs
    PlanResult r = MustPlan(req);
    EXPECT_EQ(r.best.pinned, !policies);
    const std::string text = dsl::FormatPipeProgram(r.best.program);
    Result<dsl::PipeProgram> parsed = dsl::ParsePipeProgram(text, "best.pipe");
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << text;
    dsl::CompileOptions options;
    options.costs = r.best.costs;
    Result<Schedule> again = dsl::CompilePipeProgram(*parsed, options);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_TRUE(*again == r.best.schedule) << text;
  }
}

TEST(PlannerTest, SameSeedSameSearch) {
  PlanRequest req = Request(8, 16, PerStage(8, [](int s) { return s == 0 ? Cost(2, 1.5, 0.5) : Cost(1, 1, 1); }), 6.0);
  PlanResult a = MustPlan(req);
  PlanResult b = MustPlan(req);
  ASSERT_EQ(a.evaluated.size(), b.evaluated.size());
  for (size_t i = 0; i < a.evaluated.size(); ++i) {
    EXPECT_EQ(a.evaluated[i].policy, b.evaluated[i].policy);
    EXPECT_EQ(a.evaluated[i].makespan, b.evaluated[i].makespan);
  }
}

TEST(PlannerTest, ParetoFrontIsSortedAndUndominated) {
  PlanResult r = MustPlan(Request(8, 16, {Cost(1, 1, 1)}));
  ASSERT_GE(r.pareto.size(), 2u);
  for (size_t i = 1; i < r.pareto.size(); ++i) {
    EXPECT_GT(r.pareto[i].makespan, r.pareto[i - 1].makespan);
    EXPECT_LT(r.pareto[i].peak_memory, r.pareto[i - 1].peak_memory);
  }
  EXPECT_EQ(r.pareto.front().makespan, r.best.summary.makespan);
  for (const CandidateSummary& c : r.evaluated) {
    if (!c.fits) continue;
    for (const CandidateSummary& f : r.pareto) {
      EXPECT_FALSE(c.makespan < f.makespan - 1e-9 && c.peak_memory < f.peak_memory - 1e-9)
          << c.family << " " << c.policy << " dominates a front point";
    }
  }
}

TEST(PlannerTest, BudgetsStopTheSearch) {
  PlanRequest req = Request(8, 16, {Cost(1, 1, 1)});
  req.max_candidates = 20;
  Result<PlanResult> r = Plan(req);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->stats.timed_out);
  EXPECT_LE(r->stats.evaluated, 20);
  req.max_candidates = 0;
  req.time_limit_s = 1e-9;  // only the built-in seeds (they always run)
  r = Plan(req);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->stats.timed_out);
  EXPECT_EQ(r->best.summary.origin, "built-in");
}

TEST(PlannerTest, ErrorsSayWhatToChange) {
  Result<PlanResult> r = Plan(Request(4, 8, {Cost(1, 1, 1)}, 0.5));  // less than one microbatch
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("memory cap"), std::string::npos) << r.status().message();
  PlanRequest req = Request(4, 8, {Cost(1, 1, 1)});
  req.num_layers = 2;
  r = Plan(req);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--layers"), std::string::npos) << r.status().message();
  req = Request(0, 8, {Cost(1, 1, 1)});
  EXPECT_EQ(Plan(req).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pw::search
