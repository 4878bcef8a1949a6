#include "dsl/parser.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace pw::dsl {
namespace {

PipeProgram Parse(std::string_view text) {
  Result<PipeProgram> p = ParsePipeProgram(text, "t.pipe");
  EXPECT_TRUE(p.ok()) << p.status().ToString() << "\n--- input:\n" << text;
  return p.ok() ? *p : PipeProgram{};
}

// Format, parse again, and demand the same program and the same text.
void ExpectRoundTrip(const PipeProgram& program) {
  const std::string text = FormatPipeProgram(program);
  Result<PipeProgram> again = ParsePipeProgram(text, "formatted.pipe");
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n--- formatted:\n" << text;
  EXPECT_EQ(DescribeProgramDifference(program, *again), "") << text;
  EXPECT_EQ(FormatPipeProgram(*again), text);
}

constexpr std::string_view kEverything = R"(# every directive once
schedule zb like   # names may hold blanks
ranks 4
microbatches 12
placement interleaved 3
backward split
memory 'min(m, p - r)' microbatches
kind OFFLOAD cost=0.5 memory=-1 after=F before=I stages=0,2 priority=3
kind RELOAD cost=0.25 memory=1 after=OFFLOAD before=I,W
kind SYNC cost=2 microbatch=no
priority I > F > W > OFFLOAD
traversal breadth-first group 2*p
warmup 2*(p - r) - 1
defer W max r
rank 0: 0F0 4F0 8F0 0OFFLOAD0 0SYNC
  rank 3 prefix :  3F0 7F0
layers 1 2 1 0 3 1 1 2 1 1 1 1
)";

TEST(ParserTest, ReadsEveryDirective) {
  const PipeProgram p = Parse(kEverything);
  EXPECT_EQ(p.name, "zb like");
  EXPECT_EQ(p.source_name, "t.pipe");
  EXPECT_EQ(p.ranks, 4);
  EXPECT_EQ(p.microbatches, 12);
  EXPECT_EQ(p.placement.style, PlacementStyle::kInterleaved);
  EXPECT_EQ(p.placement.chunks, 3);
  EXPECT_EQ(p.placement.loc.line, 5);
  EXPECT_TRUE(p.split_backward);
  ASSERT_TRUE(p.memory_cap.has_value());
  EXPECT_EQ(p.memory_cap->unit, MemoryCapSpec::Unit::kMicrobatches);
  EXPECT_EQ(p.memory_cap->microbatches.ToString(), "min(m, p - r)");
  EXPECT_EQ(p.memory_cap->loc.line, 7);
  EXPECT_EQ(p.memory_cap->loc.column, 8);

  ASSERT_EQ(p.kinds.size(), 3u);
  const KindDecl& off = p.kinds[0];
  EXPECT_EQ(off.info.name, "OFFLOAD");
  EXPECT_EQ(off.info.default_cost, 0.5);
  EXPECT_EQ(off.info.memory_delta_fraction, -1.0);
  EXPECT_EQ(off.info.after, std::vector<ActionKind>{ActionKind::kForward});
  EXPECT_EQ(off.info.before, std::vector<ActionKind>{ActionKind::kBackwardInput});
  EXPECT_EQ(off.stages, (std::vector<StageId>{0, 2}));
  EXPECT_EQ(off.priority, 3);
  EXPECT_EQ(off.loc.line, 8);
  EXPECT_EQ(off.loc.column, 6);
  const auto offload = static_cast<ActionKind>(static_cast<int>(ActionKind::kFirstUser));
  const auto sync = static_cast<ActionKind>(static_cast<int>(ActionKind::kFirstUser) + 2);
  EXPECT_EQ(p.kinds[1].info.after, std::vector<ActionKind>{offload});
  EXPECT_EQ(p.kinds[1].info.before, (std::vector<ActionKind>{ActionKind::kBackwardInput, ActionKind::kBackwardWeight}));
  EXPECT_TRUE(p.kinds[1].stages.empty());
  EXPECT_FALSE(p.kinds[2].info.has_microbatch);

  EXPECT_EQ(p.policy.kind_priority, (std::vector<ActionKind>{ActionKind::kBackwardInput, ActionKind::kForward,
                                                            ActionKind::kBackwardWeight, offload}));
  EXPECT_EQ(p.policy.loc.line, 11);
  EXPECT_EQ(p.policy.traversal, Traversal::kBreadthFirst);
  ASSERT_TRUE(p.policy.microbatch_group.has_value());
  EXPECT_EQ(p.policy.microbatch_group->ToString(), "2*p");
  EXPECT_EQ(p.policy.microbatch_group_loc.line, 12);
  EXPECT_EQ(p.policy.microbatch_group_loc.column, 31);
  ASSERT_TRUE(p.policy.warmup.has_value());
  EXPECT_EQ(p.policy.warmup->ToString(), "2*(p - r) - 1");
  EXPECT_EQ(p.policy.warmup_loc.line, 13);
  EXPECT_EQ(p.policy.warmup_loc.column, 8);
  ASSERT_TRUE(p.policy.max_deferred_w.has_value());
  EXPECT_EQ(p.policy.max_deferred_w->ToString(), "r");
  EXPECT_EQ(p.policy.max_deferred_w_loc.column, 13);

  ASSERT_EQ(p.pinned.size(), 2u);
  const PinnedSequence& r0 = p.pinned.at(0);
  EXPECT_FALSE(r0.prefix_only);
  EXPECT_EQ(r0.actions, (std::vector<Action>{Fwd(0, 0), Fwd(4, 0), Fwd(8, 0), Action{0, 0, offload},
                                             Action{0, kNoMicrobatch, sync}}));
  ASSERT_EQ(r0.action_locs.size(), 5u);
  EXPECT_EQ(r0.action_locs[1].column, 13);
  EXPECT_EQ(r0.loc.line, 15);
  const PinnedSequence& r3 = p.pinned.at(3);
  EXPECT_TRUE(r3.prefix_only);
  EXPECT_EQ(r3.actions, (std::vector<Action>{Fwd(3, 0), Fwd(7, 0)}));
  EXPECT_EQ(r3.loc.column, 3);
}

TEST(ParserTest, EmptyProgramKeepsEveryDefault) {
  const PipeProgram p = Parse("# nothing but a comment\n\n   \n");
  EXPECT_EQ(DescribeProgramDifference(p, PipeProgram{}), "");
  EXPECT_EQ(p.name, "custom");
  EXPECT_EQ(p.ranks, 4);
  EXPECT_EQ(p.microbatches, 8);
  EXPECT_FALSE(p.memory_cap.has_value());
  EXPECT_EQ(p.policy.kind_priority, DefaultKindPriority(false));
}

TEST(ParserTest, PlacementStyles) {
  EXPECT_EQ(Parse("placement sequential").placement.style, PlacementStyle::kSequential);
  EXPECT_EQ(Parse("placement vshape").placement.style, PlacementStyle::kVShape);
  EXPECT_EQ(Parse("placement v-shape").placement.style, PlacementStyle::kVShape);
  const PipeProgram i = Parse("placement interleaved 4");
  EXPECT_EQ(i.placement.style, PlacementStyle::kInterleaved);
  EXPECT_EQ(i.placement.chunks, 4);
  const PipeProgram e = Parse("ranks 2\nplacement explicit 0 1 1 0");
  EXPECT_EQ(e.placement.style, PlacementStyle::kExplicit);
  EXPECT_EQ(e.placement.stage_to_rank, (std::vector<RankId>{0, 1, 1, 0}));
  // Ranks may be declared after the placement that needs them.
  EXPECT_EQ(Parse("placement explicit 0 1 2\nranks 3").placement.stage_to_rank.size(), 3u);
}

TEST(ParserTest, MemoryCapForms) {
  auto cap = [](std::string_view text) { return *Parse(text).memory_cap; };
  EXPECT_EQ(cap("memory p - r microbatches").microbatches.ToString(), "p - r");
  EXPECT_EQ(cap("memory 'p-r' microbatches").microbatches.ToString(), "p - r");
  EXPECT_EQ(cap("memory 1 microbatch").microbatches.ToString(), "1");
  EXPECT_EQ(cap("memory 8GiB").unit, MemoryCapSpec::Unit::kBytes);
  EXPECT_EQ(cap("memory 8GiB").bytes, 8.0 * (1 << 30));
  EXPECT_EQ(cap("memory 1.5 GB").bytes, 1.5e9);
  EXPECT_EQ(cap("memory '512 MiB'  # quoted").bytes, 512.0 * (1 << 20));
}

TEST(ParserTest, BackwardAndPriority) {
  EXPECT_FALSE(Parse("backward fused").split_backward);
  // Split without a priority line gets 1F1B's order with B cut in two.
  const PipeProgram split = Parse("backward split");
  EXPECT_TRUE(split.split_backward);
  EXPECT_EQ(split.policy.kind_priority, DefaultKindPriority(true));
  EXPECT_EQ(Parse("priority F>B").policy.kind_priority,
            (std::vector<ActionKind>{ActionKind::kForward, ActionKind::kBackward}));
  // `backward` may follow the priority that depends on it.
  EXPECT_EQ(Parse("priority W > I\nbackward split").policy.kind_priority,
            (std::vector<ActionKind>{ActionKind::kBackwardWeight, ActionKind::kBackwardInput}));
  EXPECT_EQ(Parse("traversal depth-first").policy.traversal, Traversal::kDepthFirst);
  EXPECT_EQ(Parse("traversal breadth-first").policy.loc.line, 1);
}

TEST(ParserTest, NamesAndComments) {
  EXPECT_EQ(Parse("schedule 1f1b").name, "1f1b");
  EXPECT_EQ(Parse("schedule it's mine  # comment").name, "it's mine");
  EXPECT_EQ(Parse("schedule \"a # b\\\\ \\\"q\\\" \\x01\"").name, "a # b\\ \"q\" \x01");
  EXPECT_EQ(Parse("schedule ''").name, "");
  EXPECT_EQ(Parse("ranks 2\r\nmicrobatches 3\r\n").microbatches, 3);
}

TEST(ParserTest, RoundTripsParsedPrograms) {
  ExpectRoundTrip(Parse(kEverything));
  ExpectRoundTrip(Parse(""));
  ExpectRoundTrip(Parse("ranks 2\nplacement explicit 0 1 1 0\nmemory 3.5e9B\nrank 1 prefix:"));
  ExpectRoundTrip(Parse("placement vshape\nmemory 12345B\npriority F > B\nwarmup --(p)\n"));
  ExpectRoundTrip(Parse("memory 3KiB\nbackward split\nkind X cost=1e-300 memory=-0 priority=-5"));
}

TEST(ParserTest, LayersListBlocksPerStage) {
  PipeProgram p = Parse("ranks 2\n  layers 1 2 0  3 # blocks\n");
  EXPECT_EQ(p.layers_per_stage, (std::vector<int>{1, 2, 0, 3}));
  EXPECT_EQ(p.layers_loc.line, 2);
  EXPECT_EQ(p.layers_loc.column, 3);
  EXPECT_TRUE(Parse("").layers_per_stage.empty());
  ExpectRoundTrip(p);
  EXPECT_NE(FormatPipeProgram(p).find("\nlayers 1 2 0 3\n"), std::string::npos) << FormatPipeProgram(p);
  PipeProgram q = p;
  q.layers_per_stage = {2, 2};
  EXPECT_EQ(DescribeProgramDifference(p, q), "layers_per_stage: [1 2 0 3] vs [2 2]");
  q.layers_per_stage.clear();
  EXPECT_EQ(FormatPipeProgram(q).find("layers"), std::string::npos);
}

TEST(ParserTest, CostsNamesTheFileAsWritten) {
  PipeProgram p = Parse("ranks 2\n  costs ../plans/best.costs.json # planned with\n");
  EXPECT_EQ(p.costs_file, "../plans/best.costs.json");
  EXPECT_EQ(p.costs_loc.line, 2);
  EXPECT_EQ(p.costs_loc.column, 3);
  EXPECT_TRUE(Parse("").costs_file.empty());
  ExpectRoundTrip(p);
  EXPECT_NE(FormatPipeProgram(p).find("\ncosts ../plans/best.costs.json\n"), std::string::npos) << FormatPipeProgram(p);
  // A path with blanks is quoted, and reads back the same.
  PipeProgram q = Parse("ranks 2\ncosts 'my plans/best #2.json'\n");
  EXPECT_EQ(q.costs_file, "my plans/best #2.json");
  ExpectRoundTrip(q);
  EXPECT_EQ(DescribeProgramDifference(p, q), "costs_file: ../plans/best.costs.json vs my plans/best #2.json");
  PipeProgram blank = Parse("costs 'my plans/best.json'\n");
  EXPECT_EQ(blank.costs_file, "my plans/best.json");
  ExpectRoundTrip(blank);
  q.costs_file.clear();
  EXPECT_EQ(FormatPipeProgram(q).find("costs"), std::string::npos);
}

TEST(ParserTest, RoundTripsProgramsBuiltInCode) {
  PipeProgram p;
  p.name = "  odd\tname #1 \"quoted\" ";
  p.ranks = 3;
  p.microbatches = 5;
  p.placement.style = PlacementStyle::kInterleaved;
  p.placement.chunks = 7;
  p.split_backward = true;
  p.memory_cap = MemoryCapSpec{.unit = MemoryCapSpec::Unit::kBytes, .bytes = 0.1};
  p.policy.kind_priority = {ActionKind::kBackwardInput, ActionKind::kForward};
  p.policy.warmup = Expr::Constant(-3);
  p.policy.max_deferred_w = *Expr::Parse("max(0, r - 1) % 2");
  p.policy.traversal = Traversal::kBreadthFirst;
  p.policy.microbatch_group = *Expr::Parse("p");
  KindDecl k;
  k.info.name = "RECOMPUTE";
  k.info.default_cost = 1.0 / 3;
  k.info.memory_delta_fraction = 1;
  k.info.before = {ActionKind::kBackwardInput};
  k.stages = {2};
  p.kinds.push_back(k);
  p.pinned[2] = PinnedSequence{.actions = {BwdI(2, 0), {2, 4, ActionKind::kFirstUser}}, .prefix_only = true};
  ExpectRoundTrip(p);

  p.memory_cap = MemoryCapSpec{.unit = MemoryCapSpec::Unit::kBytes, .bytes = 3.0 * (uint64_t{1} << 40)};
  ExpectRoundTrip(p);
  EXPECT_NE(FormatPipeProgram(p).find("memory 3TiB\n"), std::string::npos);
  p.name = "";
  ExpectRoundTrip(p);
}

TEST(ParserTest, FormatWritesThePriorityTheCompilerWouldUse) {
  // A program built in code may keep the default B > F with split backward;
  // the compiler reads B as I there, and so does the printed text.
  auto printed_priority = [](const PipeProgram& p) {
    const std::string text = FormatPipeProgram(p);
    EXPECT_TRUE(ParsePipeProgram(text, "x").ok()) << text;
    const size_t at = text.find("priority ");
    return text.substr(at, text.find('\n', at) - at);
  };
  PipeProgram p;
  p.split_backward = true;
  EXPECT_EQ(printed_priority(p), "priority I > F");
  p.policy.kind_priority = {ActionKind::kBackward, ActionKind::kBackwardWeight, ActionKind::kBackwardInput};
  EXPECT_EQ(printed_priority(p), "priority I > W");
  p.policy.kind_priority.clear();
  EXPECT_EQ(printed_priority(p), "priority F > I > W");
  p.split_backward = false;
  EXPECT_EQ(printed_priority(p), "priority F > B");
  p.policy.kind_priority = {ActionKind::kBackwardInput, ActionKind::kBackwardWeight, ActionKind::kForward};
  EXPECT_EQ(printed_priority(p), "priority B > F");
}

TEST(ParserTest, FormatIsCanonical) {
  const std::string text = FormatPipeProgram(Parse("priority B>F\nranks 2\nschedule x\n"));
  EXPECT_EQ(text,
            "schedule x\nranks 2\nmicrobatches 8\nplacement sequential\nbackward fused\npriority B > F\n"
            "traversal depth-first\n");
}

TEST(ParserTest, DifferenceNamesTheField) {
  PipeProgram a = Parse("warmup p - r");
  PipeProgram b = Parse("warmup p - r - 1");
  EXPECT_EQ(DescribeProgramDifference(a, b), "policy.warmup: 'p - r' vs 'p - r - 1'");
  // Fields that a style ignores do not count.
  b = a;
  b.placement.chunks = 9;
  b.policy.microbatch_group = Expr::Constant(3);
  EXPECT_EQ(DescribeProgramDifference(a, b), "");
  a.policy.traversal = b.policy.traversal = Traversal::kBreadthFirst;
  EXPECT_EQ(DescribeProgramDifference(a, b), "policy.microbatch_group: unset vs '3'");
}

TEST(ParserTest, LoadsFiles) {
  const std::string path = (std::filesystem::temp_directory_path() / "pw_parser_test.pipe").string();
  {
    std::ofstream out(path);
    out << "schedule from-file\nranks banana\n";
  }
  Result<PipeProgram> bad = LoadPipeFile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().message().starts_with(path + ":2:7: ")) << bad.status().message();
  {
    std::ofstream out(path);
    out << "schedule from-file\nranks 2\n";
  }
  Result<PipeProgram> good = LoadPipeFile(path);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->name, "from-file");
  EXPECT_EQ(good->source_name, path);
  std::remove(path.c_str());
  Result<PipeProgram> missing = LoadPipeFile(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

// One case per error class: where it points and the words it must say.
struct ErrorCase {
  std::string text;
  const char* where;                   // "line:col"
  std::vector<const char*> words;      // substrings of the message
};

TEST(ParserTest, ErrorsPointAtTheProblem) {
  const std::vector<ErrorCase> cases = {
      // Unknown keywords, with the nearest one suggested.
      {"ranks 2\nmicrobatchs 4", "2:1", {"unknown keyword 'microbatchs'", "expected one of", "did you mean 'microbatches'?"}},
      {"rank0: 0F0", "1:1", {"unknown keyword 'rank0:'", "put a blank after 'rank'"}},
      {"name x", "1:1", {"unknown keyword 'name'", "'schedule <name>'"}},
      // Duplicates and missing values.
      {"ranks 2\n\n ranks 2", "3:2", {"duplicate 'ranks' (first at line 1)", "each directive at most once"}},
      {"ranks", "1:6", {"missing value after 'ranks'", "expected a whole number from 1", "hint: e.g. 'ranks 4'"}},
      {"warmup   # later", "1:7", {"missing value after 'warmup'", "expression"}},
      {"schedule", "1:9", {"missing value after 'schedule'", "a name"}},
      // Numbers.
      {"ranks 0", "1:7", {"the number of ranks 0 is out of range", "from 1 to 1048576"}},
      {"microbatches eight", "1:14", {"expected the number of microbatches, found 'eight'"}},
      {"ranks 99999999999999999999", "1:7", {"is too large"}},
      {"ranks 4 5", "1:9", {"unexpected '5' after the number", "the end of the line"}},
      // Placement.
      {"placement zigzag", "1:11", {"unknown placement 'zigzag'", "sequential, interleaved <chunks>, vshape or explicit"}},
      {"placement interleave 2", "1:11", {"did you mean 'interleaved'?"}},
      {"placement 0 1 2 3", "1:11", {"unknown placement '0'", "placement explicit 0 1 2 3"}},
      {"placement interleaved", "1:22", {"missing the number of chunks"}},
      {"placement interleaved 0", "1:23", {"the number of chunks 0 is out of range"}},
      // Layer split.
      {"layers", "1:7", {"missing value after 'layers'", "e.g. 'layers 1 2 1'"}},
      {"layers 1 -2 1", "1:10", {"the number of blocks -2 is out of range", "from 0 to"}},
      {"layers 1 two", "1:10", {"expected the number of blocks, found 'two'", "'layers 1 2 1'"}},
      {"layers 1\nlayers 2", "2:1", {"duplicate 'layers' (first at line 1)"}},
      {"ranks 2\nplacement explicit 0 1 2", "2:24", {"stage 2 is placed on rank 2, out of range", "'ranks' is 2 (line 1)"}},
      {"placement explicit 0 1 1 0", "1:1", {"rank 2 owns no stage", "the default 'ranks' is 4"}},
      // backward / traversal.
      {"backward splitted", "1:10", {"unknown backward 'splitted'", "'fused' or 'split'", "did you mean 'split'?"}},
      {"traversal depth", "1:11", {"unknown traversal 'depth'", "'depth-first', 'breadth-first'", "did you mean 'depth-first'?"}},
      {"traversal depth-first group p", "1:23", {"microbatch groups apply to breadth-first traversal only"}},
      {"traversal breadth-first groups p", "1:25", {"unexpected 'groups' after 'breadth-first'", "'group <expression>'"}},
      {"traversal breadth-first group", "1:30", {"missing the group size after 'group'"}},
      {"traversal breadth-first group p +", "1:34", {"bad expression", "ends too early"}},
      {"warmup 1" + [] { std::string s; for (int i = 0; i < 1000; ++i) s += "-1"; return s; }(), "1:8", {"too long (", "as printed"}},
      // Memory.
      {"memory 8", "1:8", {"'8' has no unit", "'memory 8 microbatches'"}},
      {"memory p - r", "1:8", {"'p - r' is not a memory cap", "'memory p - r microbatches'"}},
      {"memory 8 parsecs", "1:8", {"is not a memory cap", "units are B, KB"}},
      {"memory microbatches", "1:8", {"missing the expression before 'microbatches'"}},
      {"memory 1e400GiB", "1:8", {"is not a memory cap"}},
      // Priority.
      {"priority B > X", "1:14", {"unknown kind 'X' in the priority", "F, B, I, W or a kind declared above"}},
      {"priority B > > F", "1:14", {"missing a kind name in the priority"}},
      {"priority B >", "1:13", {"missing a kind name"}},
      {"priority F > B > F", "1:18", {"'F' is listed twice"}},
      {"priority B > SEND_F", "1:14", {"'SEND_F' cannot be prioritised", "lowering passes"}},
      {"priority I > F > W", "1:10", {"I needs split backward", "backward is fused unless", "add 'backward split'"}},
      {"backward split\npriority B > F", "2:10", {"B is the fused backward, but 'backward' is split (line 1)", "I (input gradients)"}},
      {"priority OFFLOAD > F\nkind OFFLOAD", "1:10", {"unknown kind 'OFFLOAD'", "'kind' line above"}},
      // Expressions, with the column inside the line.
      {"warmup p - q", "1:12", {"bad expression: unknown name 'q'", "hint: e.g. 'warmup p - r - 1'"}},
      {"memory 'p - ' microbatches", "1:13", {"bad expression", "ends too early"}},
      {"defer W max (r", "1:15", {"missing ')'"}},
      {"warmup " + std::string(3000, '1'), "1:8", {"too long"}},
      // defer.
      {"backward split\ndefer I max r", "2:7", {"only W can be deferred, found 'I'"}},
      {"backward split\ndefer W r", "2:9", {"expected 'max' after 'defer W'"}},
      {"backward split\ndefer W max", "2:12", {"missing value after 'defer'"}},
      {"\n  defer W max r", "2:3", {"'defer W' needs split backward", "add 'backward split'"}},
      // Kind declarations.
      {"kind", "1:5", {"missing value after 'kind'"}},
      {"kind offload", "1:6", {"kind name 'offload' is invalid", "upper-case"}},
      {"kind F", "1:6", {"kind 'F' is already defined"}},
      {"kind X costs=1", "1:8", {"unknown kind option 'costs'", "did you mean 'cost'?"}},
      {"kind X cost", "1:8", {"expected an option, found 'cost'", "key=value"}},
      {"kind X cost=fast", "1:13", {"expected a number for cost, found 'fast'"}},
      {"kind X cost=nan", "1:13", {"expected a number for cost"}},
      {"kind X cost=-1", "1:13", {"cost -1 is negative"}},
      {"kind X cost=1 cost=2", "1:15", {"option 'cost' given twice"}},
      {"kind X memory=", "1:15", {"missing value for 'memory'"}},
      {"kind X after=F,Y", "1:16", {"unknown kind 'Y' in after", "declare a kind before naming it"}},
      {"kind X before=B,B", "1:17", {"'B' is listed twice in before"}},
      {"kind X after=IDLE", "1:14", {"unknown kind 'IDLE'"}},
      {"kind X stages=0,x", "1:17", {"expected a stage number, found 'x'"}},
      {"kind X stages=1,1", "1:17", {"stage 1 is listed twice"}},
      {"kind X priority=9999999", "1:17", {"a priority 9999999 is out of range"}},
      {"kind X microbatch=maybe", "1:19", {"expected yes or no for microbatch"}},
      {"kind X microbatch=no after=F", "1:6", {"has no microbatch, so it cannot have after/before rules"}},
      // Pinned ranks.
      {"rank 4: 4F0", "1:6", {"rank 4 is out of range", "a rank from 0 to 3", "the default 'ranks' is 4"}},
      {"ranks 2\nrank 1: 1F0\nrank 1 prefix: 1F1", "3:6", {"rank 1 is already pinned (line 2)"}},
      {"rank x: 0F0", "1:6", {"expected a rank number after 'rank'"}},
      {"rank 0 0F0", "1:8", {"expected ':' after 'rank 0'"}},
      {"rank 0 prefix 0F0", "1:15", {"expected ':' after 'rank 0 prefix'"}},
      {"rank 0: 0F0 0Q1", "1:14", {"unknown action kind 'Q' in '0Q1'", "an action such as 0F0"}},
      {"rank 0: 0F0 F0", "1:13", {"expected a stage number", "put the stage number first"}},
      {"rank 0: 0F", "1:11", {"expected a microbatch number"}},
      {"rank 0: 0F0 .", "1:13", {"pinned sequences hold actions only"}},
      {"rank 0: 0OFFLOAD0\nkind OFFLOAD", "1:10", {"unknown action kind 'OFFLOAD'"}},
      {"costs", "1:6", {"missing value after 'costs'", "costs best.costs.json"}},
      {"costs ''", "1:7", {"empty costs path"}},
      {"costs a.json b.json", "1:14", {"unexpected 'b.json'", "quote a path with blanks"}},
      {"costs a.json\ncosts b.json", "2:1", {"duplicate 'costs'"}},
      // Lexical errors.
      {"schedule 'open", "1:10", {"unterminated string", "a closing '"}},
      {"schedule \"a\\q\"", "1:12", {"unknown escape '\\q'"}},
      {"memory '1'GiB", "1:11", {"right after a closing quote"}},
      {"'ranks' 2", "1:1", {"unknown keyword ''ranks''"}},
  };
  for (const ErrorCase& c : cases) {
    Result<PipeProgram> p = ParsePipeProgram(c.text, "bad.pipe");
    ASSERT_FALSE(p.ok()) << "accepted: " << c.text;
    const std::string& msg = p.status().message();
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(msg.starts_with("bad.pipe:" + std::string(c.where) + ": ")) << c.text << "\n  -> " << msg;
    for (const char* w : c.words) EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' not in: " << msg;
  }
}

TEST(ParserTest, ErrorsWithoutSourceNameSayInput) {
  Result<PipeProgram> p = ParsePipeProgram("ranks -1", "");
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(p.status().message().starts_with("<input>:1:7: ")) << p.status().message();
}

TEST(ParserTest, CapsSizes) {
  std::string huge_line = "rank 0:" + std::string(size_t{1} << 20, ' ');
  Result<PipeProgram> p = ParsePipeProgram(huge_line, "big.pipe");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("big.pipe:1:1: line of"), std::string::npos) << p.status().message();
  // Many small lines are fine: 10000 user kinds would overflow the registry.
  std::string kinds;
  for (int i = 0; i < 300; ++i) {
    std::string name;
    for (int n = i + 1; n > 0; n /= 26) name += static_cast<char>('A' + n % 26);
    kinds += "kind K" + name + "\n";
  }
  Result<PipeProgram> many = ParsePipeProgram(kinds, "k.pipe");
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("too many user kinds"), std::string::npos) << many.status().message();
}

}  // namespace
}  // namespace pw::dsl
