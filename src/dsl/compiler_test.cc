// CompilePipeProgram: the policy semantics on tiny pipelines whose programs
// were worked out by hand (docs/schedule-language.md, "Semantics"), and every
// error path. Every schedule the compiler returns must validate.
#include "dsl/compiler.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "schedule/validator.h"
#include "sim/simulator.h"

namespace pw::dsl {
namespace {

using K = ActionKind;

Expr E(const char* text) {
  Result<Expr> e = Expr::Parse(text);
  EXPECT_TRUE(e.ok()) << text;
  return e.ok() ? *e : Expr();
}

PipeProgram Shape(int p, int m) {
  PipeProgram program;
  program.ranks = p;
  program.microbatches = m;
  program.source_name = "t.pipe";
  return program;
}

// Compiles, checks the result with the validator, and returns it.
Schedule Compile(const PipeProgram& program, const CompileOptions& options = {}) {
  Result<Schedule> s = CompilePipeProgram(program, options);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return {};
  const Status valid = ValidateSchedule(*s);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
  return *s;
}

// One rank's program in PyTorch notation, e.g. "0F0 0F1 0B0 0B1".
std::string Prog(const Schedule& s, RankId r) {
  std::string out;
  for (const Action& a : s.programs[r]) out += (out.empty() ? "" : " ") + s.ActionName(a);
  return out;
}

// The error of a compile that must fail, with its code checked.
std::string ErrorOf(const PipeProgram& program, StatusCode code, const CompileOptions& options = {}) {
  Result<Schedule> s = CompilePipeProgram(program, options);
  EXPECT_FALSE(s.ok());
  if (s.ok()) return "";
  EXPECT_EQ(s.status().code(), code) << s.status().ToString();
  return s.status().message();
}

#define EXPECT_HAS(haystack, needle) EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

// --- kind priority --------------------------------------------------------

TEST(CompilerTest, ForwardFirstRunsEveryForwardThenTheBackwards) {
  PipeProgram program = Shape(2, 3);
  program.policy.kind_priority = {K::kForward, K::kBackward};
  const Schedule s = Compile(program);
  EXPECT_EQ(Prog(s, 0), "0F0 0F1 0F2 0B0 0B1 0B2");
  EXPECT_EQ(Prog(s, 1), "1F0 1F1 1F2 1B0 1B1 1B2");
}

TEST(CompilerTest, BackwardFirstRunsEachBackwardAsSoonAsItIsReady) {
  // F=1, B=2. Rank 1 (last stage) can start B0 at t=2, when F1 also
  // arrives: B wins. Rank 0 has nothing to do between its forwards and the
  // backwards, so it runs all three forwards first.
  PipeProgram program = Shape(2, 3);
  program.policy.kind_priority = {K::kBackward, K::kForward};
  const Schedule s = Compile(program);
  EXPECT_EQ(Prog(s, 0), "0F0 0F1 0F2 0B0 0B1 0B2");
  EXPECT_EQ(Prog(s, 1), "1F0 1B0 1F1 1B1 1F2 1B2");
}

TEST(CompilerTest, CostsDecideWhatIsReady) {
  // Stage 0's forward takes 3: rank 1 would idle for F1, so with F > B it
  // runs the ready B0 instead (a list scheduler never waits for a
  // higher-priority action that is not ready).
  PipeProgram program = Shape(2, 2);
  program.policy.kind_priority = {K::kForward, K::kBackward};
  CompileOptions options;
  options.costs.stages = {StageCost{.forward = 3, .backward = 2}, StageCost{.forward = 1, .backward = 2}};
  EXPECT_EQ(Prog(Compile(program, options), 1), "1F0 1B0 1F1 1B1");
  EXPECT_EQ(Prog(Compile(program), 1), "1F0 1F1 1B0 1B1");
}

TEST(CompilerTest, ShapeComesFromTheOptionsWhenGiven) {
  PipeProgram program = Shape(4, 8);
  const Schedule s = Compile(program, {.ranks = 2, .microbatches = 3});
  EXPECT_EQ(s.num_ranks(), 2);
  EXPECT_EQ(s.num_microbatches, 3);
  EXPECT_EQ(s.programs[0].size(), 6u);
}

// --- warm-up and memory cap -------------------------------------------------

TEST(CompilerTest, WarmupZeroAlternatesForwardAndBackward) {
  // At most 0 forwards may wait for their backward when a forward starts:
  // every rank runs F, B, F, B.
  PipeProgram program = Shape(3, 3);
  program.policy.kind_priority = {K::kForward, K::kBackward};
  program.policy.warmup = E("0");
  const Schedule s = Compile(program);
  for (RankId r = 0; r < 3; ++r) {
    const std::string st = std::to_string(r);
    EXPECT_EQ(Prog(s, r), st + "F0 " + st + "B0 " + st + "F1 " + st + "B1 " + st + "F2 " + st + "B2");
  }
}

TEST(CompilerTest, WarmupCountsThePublishedWarmupForwards) {
  // 1F1B's "p - r - 1": rank 0 of 3 runs two warm-up forwards, then one
  // forward and one backward in turn.
  PipeProgram program = Shape(3, 4);
  program.policy.warmup = E("p - r - 1");
  const Schedule s = Compile(program);
  EXPECT_EQ(Prog(s, 0), "0F0 0F1 0F2 0B0 0F3 0B1 0B2 0B3");
  EXPECT_EQ(Prog(s, 1), "1F0 1F1 1B0 1F2 1B1 1F3 1B2 1B3");
  EXPECT_EQ(Prog(s, 2), "2F0 2B0 2F1 2B1 2F2 2B2 2F3 2B3");
}

TEST(CompilerTest, MemoryCapHoldsForwardsBack) {
  // F > B, at most 2 microbatches in flight: rank 0 stops after F1 until
  // B0 frees one (hand-simulated with F=1, B=2).
  PipeProgram program = Shape(2, 4);
  program.policy.kind_priority = {K::kForward, K::kBackward};
  program.memory_cap = MemoryCapSpec{.microbatches = E("2")};
  const Schedule s = Compile(program);
  EXPECT_EQ(Prog(s, 0), "0F0 0F1 0B0 0F2 0B1 0F3 0B2 0B3");
  EXPECT_EQ(Prog(s, 1), "1F0 1F1 1B0 1B1 1F2 1B2 1F3 1B3");
}

TEST(CompilerTest, MemoryCapInBytesUsesTheCostModel) {
  PipeProgram program = Shape(2, 4);
  program.policy.kind_priority = {K::kForward, K::kBackward};
  program.memory_cap = MemoryCapSpec{.unit = MemoryCapSpec::Unit::kBytes, .bytes = 25};
  CompileOptions options;
  options.costs.stages[0].activation_bytes = 10;  // 25 bytes hold two microbatches
  EXPECT_EQ(Prog(Compile(program, options), 0), "0F0 0F1 0B0 0F2 0B1 0F3 0B2 0B3");
}

TEST(CompilerTest, CapCountsARanksShareOfAMicrobatch) {
  // V-shape: each stage is half of a rank's share. A cap of 1 microbatch
  // lets rank 0 hold stages 0 and 3 of one microbatch, never two.
  PipeProgram program = Shape(2, 3);
  program.placement.style = PlacementStyle::kVShape;
  program.memory_cap = MemoryCapSpec{.microbatches = E("1")};
  const Schedule s = Compile(program);
  EXPECT_EQ(Prog(s, 0), "0F0 3F0 3B0 0B0 0F1 3F1 3B1 0B1 0F2 3F2 3B2 0B2");
  CostModel costs;
  costs.stages[0].activation_bytes = 0.5;
  ASSERT_TRUE(costs.Resolve(s).ok());
  Result<SimResult> sim = Simulate(s, costs);
  ASSERT_TRUE(sim.ok());
  for (const RankSimResult& r : sim->ranks) EXPECT_LE(r.peak_memory, 1.0);
}

// --- traversal ---------------------------------------------------------------

// The forwards of one rank's program, in order.
std::string Forwards(const Schedule& s, RankId r) {
  std::string out;
  for (const Action& a : s.programs[r]) {
    if (a.kind == K::kForward) out += (out.empty() ? "" : " ") + s.ActionName(a);
  }
  return out;
}

TEST(CompilerTest, DepthFirstMovesAMicrobatchOnBeforeStartingTheNext) {
  // Interleaved p=2, v=2: rank 0 owns stages 0 and 2. F(2,0) is ready at
  // t=2 together with F(0,2); depth-first takes the lower microbatch.
  PipeProgram program = Shape(2, 4);
  program.placement.style = PlacementStyle::kInterleaved;
  program.policy.kind_priority = {K::kForward, K::kBackward};
  program.policy.traversal = Traversal::kDepthFirst;
  EXPECT_EQ(Forwards(Compile(program), 0), "0F0 0F1 2F0 2F1 0F2 0F3 2F2 2F3");
}

TEST(CompilerTest, BreadthFirstFinishesAStageFirst) {
  PipeProgram program = Shape(2, 4);
  program.placement.style = PlacementStyle::kInterleaved;
  program.policy.kind_priority = {K::kForward, K::kBackward};
  program.policy.traversal = Traversal::kBreadthFirst;
  const Schedule s = Compile(program);
  EXPECT_EQ(Forwards(s, 0), "0F0 0F1 0F2 0F3 2F0 2F1 2F2 2F3");
  // Backwards: the latest stage first.
  EXPECT_EQ(Prog(s, 0).substr(Prog(s, 0).find("2B")), "2B0 2B1 2B2 2B3 0B0 0B1 0B2 0B3");
}

TEST(CompilerTest, BreadthFirstGroupsRunGroupAfterGroup) {
  // Groups of 2 microbatches (Megatron's groups of p): group 0 through both
  // stages before group 1 starts, whenever group 0 is ready.
  PipeProgram program = Shape(2, 4);
  program.placement.style = PlacementStyle::kInterleaved;
  program.policy.kind_priority = {K::kForward, K::kBackward};
  program.policy.traversal = Traversal::kBreadthFirst;
  program.policy.microbatch_group = E("p");
  EXPECT_EQ(Forwards(Compile(program), 0), "0F0 0F1 2F0 2F1 0F2 0F3 2F2 2F3");
}

// --- split backward and W deferral ---------------------------------------------

TEST(CompilerTest, SplitBackwardDefersWByTheLimit) {
  PipeProgram program = Shape(1, 3);
  program.split_backward = true;
  program.policy.kind_priority = {K::kBackwardInput, K::kForward, K::kBackwardWeight};
  // No limit: W's wait until nothing else is ready.
  EXPECT_EQ(Prog(Compile(program), 0), "0F0 0I0 0F1 0I1 0F2 0I2 0W0 0W1 0W2");
  // Limit 0: W right after its I while forwards remain.
  program.policy.max_deferred_w = E("0");
  EXPECT_EQ(Prog(Compile(program), 0), "0F0 0I0 0W0 0F1 0I1 0W1 0F2 0I2 0W2");
  // Limit 1: one W may stay pending.
  program.policy.max_deferred_w = E("1");
  EXPECT_EQ(Prog(Compile(program), 0), "0F0 0I0 0F1 0I1 0W0 0F2 0I2 0W1 0W2");
}

TEST(CompilerTest, WLimitStopsBindingAfterTheLastForward) {
  // F > I > W, one warm-up forward, W limit 0: W0 jumps ahead of F2 while
  // a forward remains; after F2 the I's go first and the W's fill the end.
  PipeProgram program = Shape(1, 3);
  program.split_backward = true;
  program.policy.kind_priority = {K::kForward, K::kBackwardInput, K::kBackwardWeight};
  program.policy.warmup = E("1");
  program.policy.max_deferred_w = E("0");
  EXPECT_EQ(Prog(Compile(program), 0), "0F0 0F1 0I0 0W0 0F2 0I1 0I2 0W1 0W2");
}

TEST(CompilerTest, SplitProgramsKeepingTheDefaultPriorityReadBAsIThenW) {
  PipeProgram program = Shape(1, 2);
  program.split_backward = true;  // kind_priority stays {B, F}: I > W > F
  EXPECT_EQ(Prog(Compile(program), 0), "0F0 0I0 0W0 0F1 0I1 0W1");
}

// --- user kinds ----------------------------------------------------------------

KindDecl Kind(const char* name, double cost, double memory, std::vector<ActionKind> after,
              std::vector<ActionKind> before, std::vector<StageId> stages, int priority) {
  KindDecl d;
  d.info.name = name;
  d.info.default_cost = cost;
  d.info.memory_delta_fraction = memory;
  d.info.after = std::move(after);
  d.info.before = std::move(before);
  d.stages = std::move(stages);
  d.priority = priority;
  return d;
}

TEST(CompilerTest, OffloadAfterForwardAndReloadJustBeforeBackward) {
  // OFFLOAD (priority 1: ahead of F and B) runs as soon as its F ends;
  // RELOAD runs when B(0,mb) has every other input (B(1,mb) arrived), just
  // before it. Hand-simulated: F=1, B=2, OFFLOAD=RELOAD=0.5.
  PipeProgram program = Shape(2, 2);
  program.policy.warmup = E("p - r - 1");
  program.kinds.push_back(Kind("OFFLOAD", 0.5, -1, {K::kForward}, {}, {0}, 1));
  const auto offload = static_cast<ActionKind>(static_cast<int>(K::kFirstUser));
  program.kinds.push_back(Kind("RELOAD", 0.5, 1, {offload}, {K::kBackward}, {0}, 0));
  const Schedule s = Compile(program);
  EXPECT_EQ(Prog(s, 0), "0F0 0OFFLOAD0 0F1 0OFFLOAD1 0RELOAD0 0B0 0RELOAD1 0B1");
  EXPECT_EQ(Prog(s, 1), "1F0 1B0 1F1 1B1");
  // Offloading keeps at most one microbatch's activations on rank 0.
  CostModel costs;
  costs.stages[0].activation_bytes = 1;
  ASSERT_TRUE(costs.Resolve(s).ok());
  Result<SimResult> sim = Simulate(s, costs);
  ASSERT_TRUE(sim.ok());
  EXPECT_EQ(sim->ranks[0].peak_memory, 1.0);
  // RELOAD with only its `before` rule runs at the same moment: just in
  // time is what places it, not the `after`.
  program.kinds[1].info.after.clear();
  EXPECT_EQ(Prog(Compile(program), 0), "0F0 0OFFLOAD0 0F1 0OFFLOAD1 0RELOAD0 0B0 0RELOAD1 0B1");
}

TEST(CompilerTest, UserKindWithoutPriorityWaitsForIdleTime) {
  // A LOG kind after B with priority 0 comes after F and B: rank 0 logs
  // only when nothing else is ready.
  PipeProgram program = Shape(1, 2);
  program.policy.kind_priority = {K::kForward, K::kBackward};
  program.kinds.push_back(Kind("LOG", 1, 0, {K::kBackward}, {}, {}, 0));
  EXPECT_EQ(Prog(Compile(program), 0), "0F0 0F1 0B0 0B1 0LOG0 0LOG1");
}

// --- pinned sequences ---------------------------------------------------------------

TEST(CompilerTest, PinnedFullProgramIsKeptAndOthersWaitForIt) {
  // Rank 1 runs its backwards in reverse; rank 0's policy sees B(1,1)
  // first, so it runs B1 before B0.
  PipeProgram program = Shape(2, 2);
  program.pinned[1] = PinnedSequence{{Fwd(1, 0), Fwd(1, 1), Bwd(1, 1), Bwd(1, 0)}, false, {3, 1}};
  const Schedule s = Compile(program);
  EXPECT_EQ(Prog(s, 1), "1F0 1F1 1B1 1B0");
  EXPECT_EQ(Prog(s, 0), "0F0 0F1 0B1 0B0");
}

TEST(CompilerTest, PinnedPrefixThenThePolicy) {
  // Rank 0 starts with F1, F0; then B > F continues (hand-simulated).
  PipeProgram program = Shape(2, 3);
  program.pinned[0] = PinnedSequence{{Fwd(0, 1), Fwd(0, 0)}, true, {3, 1}};
  const Schedule s = Compile(program);
  EXPECT_EQ(Prog(s, 0), "0F1 0F0 0F2 0B1 0B0 0B2");
  EXPECT_EQ(Prog(s, 1), "1F1 1B1 1F0 1B0 1F2 1B2");
}

// --- errors ---------------------------------------------------------------------------

TEST(CompilerTest, CapBelowOneMicrobatchIsRejected) {
  PipeProgram program = Shape(4, 8);
  program.memory_cap = MemoryCapSpec{.microbatches = E("p - r - 1"), .loc = {5, 8}};
  const std::string msg = ErrorOf(program, StatusCode::kFailedPrecondition);
  EXPECT_HAS(msg, "t.pipe:5:8: ");
  EXPECT_HAS(msg, "rank 3 may hold 0 microbatches, but a forward needs 1");

  program.memory_cap = MemoryCapSpec{.unit = MemoryCapSpec::Unit::kBytes, .bytes = 1000, .loc = {5, 8}};
  CompileOptions options;
  options.costs.stages[0].activation_bytes = 4096;
  EXPECT_HAS(ErrorOf(program, StatusCode::kFailedPrecondition, options), "less than rank 0's activations");
}

TEST(CompilerTest, ExplicitPlacementOfTheWrongLengthIsRejected) {
  // Written for 2 ranks; compiled for 4 (the CLI's --ranks), two ranks own
  // nothing; for 8 the list is shorter than the ranks.
  PipeProgram program = Shape(2, 8);
  program.placement = {.style = PlacementStyle::kExplicit, .stage_to_rank = {0, 1, 1, 0}, .loc = {4, 1}};
  EXPECT_TRUE(CompilePipeProgram(program).ok());
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument, {.ranks = 4}),
             "t.pipe:4:1: the explicit placement gives rank 2 no stage; every rank needs at least one");
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument, {.ranks = 8}),
             "t.pipe:4:1: the explicit placement lists 4 stages for 8 ranks");
}

TEST(CompilerTest, ExplicitPlacementErrorsNameTheProblem) {
  PipeProgram program = Shape(4, 8);
  program.placement = {.style = PlacementStyle::kExplicit, .stage_to_rank = {0, 1}, .loc = {4, 1}};
  std::string msg = ErrorOf(program, StatusCode::kInvalidArgument);
  EXPECT_HAS(msg, "t.pipe:4:1: the explicit placement lists 2 stages for 4 ranks");
  program.placement.stage_to_rank = {0, 1, 2, 5};
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument), "puts stage 3 on rank 5, but the pipeline has 4 ranks");
  program.placement.stage_to_rank = {0, 1, 2, 2};
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument), "gives rank 3 no stage");
}

TEST(CompilerTest, PinnedActionOnTheWrongRankIsRejected) {
  PipeProgram program = Shape(2, 2);
  program.pinned[0] = PinnedSequence{{Fwd(0, 0), Fwd(1, 0)}, true, {6, 1}, {{6, 9}, {6, 13}}};
  const std::string msg = ErrorOf(program, StatusCode::kFailedPrecondition);
  EXPECT_HAS(msg, "t.pipe:6:13: ");
  EXPECT_HAS(msg, "rank 0's pinned action 2, 1F0, runs stage 1, which the placement puts on rank 1");
}

TEST(CompilerTest, PinnedDeadlockIsRejectedWithTheReason) {
  // B0 before F0 on the same rank.
  PipeProgram program = Shape(2, 2);
  program.pinned[0] = PinnedSequence{{Bwd(0, 0), Fwd(0, 0), Fwd(0, 1), Bwd(0, 1)}, false, {6, 1}};
  std::string msg = ErrorOf(program, StatusCode::kDeadlock);
  EXPECT_HAS(msg, "t.pipe: the program cannot finish");
  EXPECT_HAS(msg, "rank 0 (4 left): pinned action 1, 0B0, waits for 0F0 (rank 0), which comes later in rank 0's "
                  "pinned sequence (move it earlier)");
  EXPECT_HAS(msg, "rank 1 (4 left): 1B0 waits for 1F0 (rank 1), which waits for 0F0 (rank 0), which comes later");

  // A cycle across ranks: rank 1 wants microbatch 1 first, rank 0 will not
  // send it before microbatch 0's backward.
  program.pinned.clear();
  program.pinned[0] = PinnedSequence{{Fwd(0, 0), Bwd(0, 0), Fwd(0, 1), Bwd(0, 1)}, false, {6, 1}};
  program.pinned[1] = PinnedSequence{{Fwd(1, 1), Bwd(1, 1), Fwd(1, 0), Bwd(1, 0)}, false, {7, 1}};
  msg = ErrorOf(program, StatusCode::kDeadlock);
  EXPECT_HAS(msg, "rank 0 (3 left): pinned action 2, 0B0, waits for 1B0 (rank 1), which comes later");
  EXPECT_HAS(msg, "rank 1 (4 left): pinned action 1, 1F1, waits for 0F1 (rank 0), which comes later");
}

TEST(CompilerTest, PinnedSequencesMustFitTheProgram) {
  PipeProgram program = Shape(2, 2);
  program.pinned[0] = PinnedSequence{{Fwd(0, 0), Bwd(0, 0)}, false, {6, 1}};
  EXPECT_HAS(ErrorOf(program, StatusCode::kFailedPrecondition),
             "t.pipe:6:1: rank 0's pinned program lacks 0F1, 0B1; pin every action of the rank, or mark the sequence "
             "as a prefix");
  program.pinned[0] = PinnedSequence{{Fwd(0, 0), Fwd(0, 0)}, true, {6, 1}};
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument), "rank 0's pinned action 2, 0F0, is pinned twice");
  program.pinned[0] = PinnedSequence{{Fwd(0, 5)}, true, {6, 1}};
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument),
             "is out of range: the pipeline has 2 stages and 2 microbatches");
  program.pinned[0] = PinnedSequence{{BwdI(0, 0)}, true, {6, 1}};
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument), "is a I: the program does not split the backward");
  program.split_backward = true;
  program.pinned[0] = PinnedSequence{{Bwd(0, 0)}, true, {6, 1}};
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument), "the program splits the backward; pin I and W instead");
  program.pinned.clear();
  program.pinned[3] = PinnedSequence{{Fwd(3, 0)}, true, {6, 1}};
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument), "pinned for rank 3, but the pipeline has 2 ranks");
}

TEST(CompilerTest, LimitsThatCannotBeMetAreDeadlocks) {
  // V-shape rank 0 needs stage 0's and stage 3's forwards before its first
  // backward; a warm-up of 0 lets only one wait.
  PipeProgram program = Shape(2, 2);
  program.placement.style = PlacementStyle::kVShape;
  program.policy.warmup = E("0");
  const std::string msg = ErrorOf(program, StatusCode::kDeadlock);
  EXPECT_HAS(msg, "the program cannot finish");
  EXPECT_HAS(msg, "is ready but the warm-up lets 1 forwards wait for their backward and 1 wait (raise the warm-up)");
}

TEST(CompilerTest, MemoryThatIsNeverFreedIsADeadlock) {
  // KEEP adds a stage's worth of activations that nothing frees: KEEP0
  // fills the cap of 1 for good, and KEEP1 never fits.
  PipeProgram program = Shape(1, 2);
  program.memory_cap = MemoryCapSpec{.microbatches = E("1")};
  program.kinds.push_back(Kind("KEEP", 1, 1, {K::kForward}, {}, {}, 0));
  const std::string msg = ErrorOf(program, StatusCode::kDeadlock);
  EXPECT_HAS(msg, "rank 0 (1 left): 0KEEP1 is ready but the memory cap allows 1 microbatches, the rank holds or "
                  "has reserved 1 and it needs 1 more (raise the cap)");
}

TEST(CompilerTest, ExpressionAndPolicyErrorsCarryTheirLocation) {
  PipeProgram program = Shape(4, 8);
  program.policy.warmup = E("p - r - 2");
  program.policy.warmup_loc = {7, 8};
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument),
             "t.pipe:7:8: warmup 'p - r - 2' is -1 for rank 3; it must be at least 0");
  program.policy.warmup = E("p / (r - 1) + 4");
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument),
             "t.pipe:7:8: warmup 'p/(r - 1) + 4' fails for rank 1: division by zero");
  program.policy.warmup.reset();
  program.policy.max_deferred_w = E("r");
  program.policy.max_deferred_w_loc = {8, 13};
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument),
             "t.pipe:8:13: max_deferred_w applies only to split backward");
  program.policy.max_deferred_w.reset();
  program.policy.traversal = Traversal::kBreadthFirst;
  program.policy.microbatch_group = E("r");
  program.policy.microbatch_group_loc = {9, 31};
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument), "t.pipe:9:31: the microbatch group 'r' is 0 for rank 0");
  program.policy.microbatch_group.reset();
  program.policy.kind_priority = {K::kForward, K::kSendForward};
  program.policy.loc = {10, 1};
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument), "t.pipe:10:1: the kind priority names SEND_F");
}

TEST(CompilerTest, KindDeclarationErrors) {
  PipeProgram program = Shape(2, 2);
  program.kinds.push_back(Kind("RELOAD", 1, 1, {}, {K::kBackward}, {}, 0));
  program.kinds.back().loc = {3, 6};
  program.split_backward = true;
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument),
             "t.pipe:3:6: kind RELOAD is 'before B'; the program splits the backward, so write 'before I'");
  program.split_backward = false;
  program.kinds.back().stages = {7};
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument),
             "kind RELOAD lists stage 7, but the pipeline has 2 stages");
  program.kinds.back().stages = {};
  program.kinds.back().info.name = "bad name";
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument), "t.pipe:3:6: ");
}

TEST(CompilerTest, ShapeAndCostErrors) {
  PipeProgram program = Shape(0, 8);
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument), "needs at least 1 rank and 1 microbatch");
  program = Shape(2, 2);
  CompileOptions options;
  options.costs.stages.assign(3, StageCost{});
  EXPECT_HAS(ErrorOf(program, StatusCode::kInvalidArgument, options), "compile costs: cost table has 3 stages");
  // Callers add their hint on the reason, not on the wording.
  Result<Schedule> misfit = CompilePipeProgram(program, options);
  ASSERT_FALSE(misfit.ok());
  EXPECT_EQ(misfit.status().reason(), StatusReason::kCostsDoNotFit);
  EXPECT_EQ(CompilePipeProgram(Shape(0, 8)).status().reason(), StatusReason::kUnspecified);
}

// --- properties over random policies --------------------------------------------------------

// Random programs either compile to a valid schedule that respects the cap
// and the warm-up, or fail as a deadlock with a reason; never anything else.
TEST(CompilerTest, RandomPoliciesCompileToValidSchedulesOrExplainTheDeadlock) {
  std::mt19937 rng(12345);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  int compiled = 0;
  for (int iter = 0; iter < 600; ++iter) {
    PipeProgram program = Shape(1 + pick(4), 1 + pick(8));
    program.placement.style = static_cast<PlacementStyle>(pick(4));
    program.placement.chunks = 1 + pick(3);
    if (program.placement.style == PlacementStyle::kExplicit) {
      // Every rank once, then a few more stages anywhere.
      for (RankId r = 0; r < program.ranks; ++r) program.placement.stage_to_rank.push_back(r);
      for (int extra = pick(4); extra > 0; --extra) program.placement.stage_to_rank.push_back(pick(program.ranks));
      std::shuffle(program.placement.stage_to_rank.begin(), program.placement.stage_to_rank.end(), rng);
    }
    program.split_backward = pick(2) == 1;
    if (pick(3) == 0) {
      program.kinds.push_back(Kind("OFFLOAD", 0.5, -1, {K::kForward}, {}, {}, pick(3) - 1));
      const auto offload = static_cast<ActionKind>(static_cast<int>(K::kFirstUser));
      const ActionKind target = program.split_backward ? K::kBackwardInput : K::kBackward;
      program.kinds.push_back(Kind("RELOAD", 0.5, 1, {offload}, {target}, {}, pick(3) - 1));
    }
    std::vector<ActionKind> kinds = {K::kForward, program.split_backward ? K::kBackwardInput : K::kBackward};
    if (program.split_backward) kinds.push_back(K::kBackwardWeight);
    std::shuffle(kinds.begin(), kinds.end(), rng);
    program.policy.kind_priority = kinds;
    program.policy.traversal = pick(2) ? Traversal::kDepthFirst : Traversal::kBreadthFirst;
    if (pick(2)) program.policy.microbatch_group = Expr::Constant(1 + pick(4));
    if (pick(2)) program.policy.warmup = Expr::Constant(pick(6));
    if (program.split_backward && pick(2)) program.policy.max_deferred_w = Expr::Constant(pick(3));
    if (pick(2)) program.memory_cap = MemoryCapSpec{.microbatches = Expr::Constant(1 + pick(4))};
    CompileOptions options;
    options.costs.stages[0] = StageCost{.forward = 1.0 + pick(3), .backward = 1.0 + pick(4)};
    SCOPED_TRACE("iteration " + std::to_string(iter));
    Result<Schedule> s = CompilePipeProgram(program, options);
    if (!s.ok()) {
      EXPECT_EQ(s.status().code(), StatusCode::kDeadlock) << s.status().ToString();
      EXPECT_HAS(s.status().message(), "cannot finish");
      continue;
    }
    ++compiled;
    ASSERT_TRUE(ValidateSchedule(*s).ok()) << ValidateSchedule(*s).ToString();
    // Pinning what the policy chose anyway, as a prefix or a whole
    // program, changes nothing.
    {
      PipeProgram pinned = program;
      const RankId r = pick(s->num_ranks());
      const Program& chosen = s->programs[r];
      const bool whole = pick(2) == 1;
      const size_t n = whole ? chosen.size() : static_cast<size_t>(pick(static_cast<int>(chosen.size()) + 1));
      pinned.pinned[r] = PinnedSequence{Program(chosen.begin(), chosen.begin() + static_cast<std::ptrdiff_t>(n)),
                                        !whole, {}};
      Result<Schedule> again = CompilePipeProgram(pinned, options);
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      EXPECT_EQ(again->programs, s->programs);
    }
    // The cap, in shares of a microbatch, held from F until B or W.
    if (program.memory_cap) {
      const double cap = static_cast<double>(*program.memory_cap->microbatches.Evaluate({}));
      for (RankId r = 0; r < s->num_ranks(); ++r) {
        const double share = 1.0 / static_cast<double>(s->placement.StagesOf(r).size());
        double held = 0;
        for (const Action& a : s->programs[r]) {
          if (a.kind == K::kForward) held += share;
          if (a.kind == K::kBackward || a.kind == K::kBackwardWeight) held -= share;
          if (IsUserKind(a.kind)) held += share * s->kinds.Info(a.kind).memory_delta_fraction;
          EXPECT_LE(held, cap + 1e-9);
        }
      }
    }
    // The warm-up: when a forward starts, at most `warmup` forwards wait.
    if (program.policy.warmup) {
      const int64_t w = *program.policy.warmup->Evaluate({});
      for (RankId r = 0; r < s->num_ranks(); ++r) {
        int64_t waiting = 0;
        for (const Action& a : s->programs[r]) {
          if (a.kind == K::kForward) {
            EXPECT_LE(waiting, w);
            ++waiting;
          }
          if (a.kind == K::kBackward || a.kind == K::kBackwardInput) --waiting;
        }
      }
    }
  }
  EXPECT_GT(compiled, 300);
}

}  // namespace
}  // namespace pw::dsl
