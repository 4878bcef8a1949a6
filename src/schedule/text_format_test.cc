#include "schedule/text_format.h"

#include <gtest/gtest.h>

#include <random>

#include "schedule/action_text.h"
#include "schedule/lowering.h"

namespace pw {
namespace {

// 1F1B on 2 ranks, 2 microbatches, with an idle step, by hand.
Schedule Small() {
  Schedule s = MakeEmptySchedule("1f1b", *Placement::Sequential(2), 2);
  s.programs[0] = {Fwd(0, 0), Fwd(0, 1), kIdleAction, Bwd(0, 0), Bwd(0, 1)};
  s.programs[1] = {Fwd(1, 0), Bwd(1, 0), Fwd(1, 1), Bwd(1, 1)};
  return s;
}

constexpr std::string_view kSmallText =
    "# pipewright schedule v1\n"
    "name 1f1b\n"
    "ranks 2\n"
    "microbatches 2\n"
    "placement 0 1\n"
    "rank 0: 0F0 0F1 . 0B0 0B1\n"
    "rank 1: 1F0 1B0 1F1 1B1\n";

// A schedule using every feature: V-shape placement, user kinds with rules,
// comm, REDUCE_GRAD/OPT, idle steps, an empty program.
Schedule Rich() {
  Schedule s = MakeEmptySchedule("rich one", *Placement::VShape(3), 2);
  KindInfo offload;
  offload.name = "OFFLOAD";
  offload.default_cost = 0.5;
  offload.memory_delta_fraction = -1;
  offload.after = {ActionKind::kForward};
  ActionKind off = *s.kinds.Register(offload);
  KindInfo reload;
  reload.name = "RELOAD";
  reload.default_cost = 0.1;
  reload.memory_delta_fraction = 1;
  reload.after = {off};
  reload.before = {ActionKind::kBackward, ActionKind::kBackwardInput};
  ActionKind rel = *s.kinds.Register(reload);
  KindInfo slot;
  slot.name = "HARVEST_SLOT";
  slot.has_microbatch = false;
  slot.default_cost = 1e-7;
  ActionKind harvest = *s.kinds.Register(slot);
  s.programs[0] = {Fwd(0, 0), {0, 0, ActionKind::kSendForward}, {0, 0, off}, kIdleAction, {0, 0, rel},
                   Bwd(0, 0), {0, kNoMicrobatch, ActionKind::kReduceGrad}, {5, kNoMicrobatch, ActionKind::kOptimizer}};
  s.programs[1] = {{1, 1, ActionKind::kRecvForward}, BwdI(4, 1), BwdW(4, 1), {1, kNoMicrobatch, harvest}};
  s.programs[2] = {};
  return s;
}

TEST(TextFormatTest, FormatsByHand) {
  EXPECT_EQ(FormatScheduleText(Small()), kSmallText);
}

TEST(TextFormatTest, ParsesByHand) {
  Result<Schedule> s = ParseScheduleText(kSmallText, "small.txt");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*s, Small());
  EXPECT_EQ(s->name, "1f1b");
}

TEST(TextFormatTest, RoundTripsEveryFeatureExactly) {
  const Schedule rich = Rich();
  const std::string text = FormatScheduleText(rich);
  EXPECT_NE(text.find("kind OFFLOAD cost=0.5 memory=-1 after=F\n"), std::string::npos) << text;
  EXPECT_NE(text.find("kind RELOAD cost=0.1 memory=1 after=OFFLOAD before=B,I\n"), std::string::npos) << text;
  EXPECT_NE(text.find("kind HARVEST_SLOT cost=1e-07 memory=0 microbatch=no\n"), std::string::npos) << text;
  EXPECT_NE(text.find("placement 0 1 2 2 1 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 0: 0F0 0SEND_F0 0OFFLOAD0 . 0RELOAD0 0B0 0REDUCE_GRAD 5OPT\n"), std::string::npos);
  EXPECT_NE(text.find("rank 1: 1RECV_F1 4I1 4W1 1HARVEST_SLOT\n"), std::string::npos);
  EXPECT_NE(text.find("rank 2:\n"), std::string::npos);
  Result<Schedule> back = ParseScheduleText(text, "rich.txt");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, rich);
  EXPECT_EQ(back->name, "rich one");
  EXPECT_EQ(FormatScheduleText(*back), text);
}

TEST(TextFormatTest, RoundTripsLoweredSchedules) {
  Result<Schedule> lowered = AddGradientSync(Small());
  ASSERT_TRUE(lowered.ok());
  lowered = InsertCommunication(*lowered);
  ASSERT_TRUE(lowered.ok());
  Result<Schedule> back = ParseScheduleText(FormatScheduleText(*lowered), "x");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, *lowered);
}

TEST(TextFormatTest, AcceptsCommentsBlankLinesCrlfAndAnyOrder) {
  const std::string text =
      "# hand-written\r\n"
      "\r\n"
      "rank 1:   1F0 1B0\t1F1 1B1   # steady state\r\n"
      "microbatches 2\r\n"
      "  placement 0 1          # stage -> rank\r\n"
      "ranks 2\r\n"
      "rank 0 : 0F0 0F1 . 0B0 0B1\r\n"
      "name   1f1b   \r\n";
  Result<Schedule> s = ParseScheduleText(text, "edit.txt");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(*s, Small());
  EXPECT_EQ(s->name, "1f1b");
  EXPECT_EQ(FormatScheduleText(*s), kSmallText);
}

TEST(TextFormatTest, NameIsOptionalAndSanitizedOnFormat) {
  std::string text(kSmallText);
  text.erase(text.find("name 1f1b\n"), 10);
  Result<Schedule> s = ParseScheduleText(text, "x");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->name, "");
  EXPECT_NE(FormatScheduleText(*s).find("\nname\n"), std::string::npos);

  Schedule odd = Small();
  odd.name = " a#b\nc ";
  Result<Schedule> back = ParseScheduleText(FormatScheduleText(odd), "x");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->name, "a_b_c");
}

// Replaces the first occurrence of `from` in the small text by `to` and
// returns the parse error message.
std::string ErrorAfter(std::string_view from, std::string_view to) {
  std::string text(kSmallText);
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  Result<Schedule> s = ParseScheduleText(text, "s.txt");
  EXPECT_FALSE(s.ok()) << text;
  if (s.ok()) return "";
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  return s.status().message();
}

TEST(TextFormatTest, SyntaxErrorsCarryLineColumnAndHint) {
  EXPECT_EQ(ErrorAfter("0F0 0F1 . 0B0", "0F0 F1 . 0B0"),
            "s.txt:6:13: expected a stage number, found 'F' in 'F1'; put the stage number first; actions look "
            "like 2F0, 1SEND_F3 or 0REDUCE_GRAD");
  EXPECT_EQ(ErrorAfter("1B0 1F1", "1B0 1Q1"),
            "s.txt:7:18: unknown action kind 'Q' in '1Q1'; known kinds: F B I W SEND_F RECV_F SEND_B RECV_B "
            "REDUCE_GRAD OPT");
  EXPECT_EQ(ErrorAfter("0B1\n", "0B\n"),
            "s.txt:6:25: expected a microbatch number, found the end in '0B'; B actions take one, e.g. 0B0");
  EXPECT_EQ(ErrorAfter("rank 1:", "rank 1"), "s.txt:7:8: expected ':' after 'rank 1'; rank lines look like "
                                             "'rank 0: 0F0 0F1 . 0B0'");
  EXPECT_EQ(ErrorAfter("rank 1:", "rank x:"), "s.txt:7:6: expected a rank number, found 'x'; rank lines look like "
                                              "'rank 0: 0F0 0F1 . 0B0'");
  EXPECT_NE(ErrorAfter("rank 1:", "rank1:").find("put a blank after 'rank'"), std::string::npos);
  EXPECT_EQ(ErrorAfter("ranks 2", "rangs 2"),
            "s.txt:3:1: unknown line keyword 'rangs'; lines start with name, ranks, microbatches, placement, kind "
            "or 'rank N:'");
  EXPECT_EQ(ErrorAfter("ranks 2", "ranks two"),
            "s.txt:3:7: expected the number of ranks (a whole number), found 'two'; e.g. 'ranks 4'");
  EXPECT_EQ(ErrorAfter("ranks 2", "ranks 2 3"), "s.txt:3:9: 'ranks' takes exactly one number, found 2; e.g. 'ranks 4'");
  EXPECT_EQ(ErrorAfter("microbatches 2", "microbatches 0"),
            "s.txt:4:14: the number of microbatches '0' is out of range 1..2147483647; e.g. 'microbatches 8'");
  EXPECT_NE(ErrorAfter("microbatches 2", "microbatches 99999999999999999999").find("out of range"),
            std::string::npos);
  EXPECT_EQ(ErrorAfter("# pipewright schedule v1", "# pipewright schedule v2"),
            "s.txt:1:23: unsupported format version 'v2'; this pipewright reads '# pipewright schedule v1'");
}

TEST(TextFormatTest, StructuralErrors) {
  EXPECT_EQ(ErrorAfter("ranks 2\n", ""), "s.txt: missing 'ranks' line; add one, e.g. 'ranks 4'");
  EXPECT_EQ(ErrorAfter("microbatches 2\n", ""), "s.txt: missing 'microbatches' line; add one, e.g. 'microbatches 8'");
  EXPECT_EQ(ErrorAfter("placement 0 1\n", ""),
            "s.txt: missing 'placement' line; add the rank of each stage, e.g. 'placement 0 1 2 3'");
  EXPECT_EQ(ErrorAfter("ranks 2\n", "ranks 2\nranks 2\n"),
            "s.txt:4:1: duplicate 'ranks' line (first at line 3); keep one");
  EXPECT_EQ(ErrorAfter("name 1f1b\n", "name 1f1b\nname other\n"),
            "s.txt:3:1: duplicate 'name' line (first at line 2); keep one");
  EXPECT_EQ(ErrorAfter("rank 1:", "rank 0:"),
            "s.txt:7:6: rank 0 already has a line (line 6); write each rank's whole program on one line");
  EXPECT_EQ(ErrorAfter("rank 1:", "rank 2:"),
            "s.txt:7:6: rank 2 is out of range: 'ranks' is 2; ranks are numbered 0..1");
  EXPECT_EQ(ErrorAfter("rank 1: 1F0 1B0 1F1 1B1\n", ""),
            "s.txt: no line for rank 1; add 'rank 1:' followed by its actions (it may be empty)");
  EXPECT_EQ(ErrorAfter("placement 0 1", "placement 0"),
            "s.txt:5:1: placement lists 1 stages but 'ranks' is 2 (line 3); every rank needs at least one stage; "
            "give one rank per stage, e.g. 'placement 0 1 2 3'");
  EXPECT_EQ(ErrorAfter("placement 0 1", "placement 0 2"),
            "s.txt:5:13: rank '2' is out of range 0..1; each entry is the rank (0..ranks-1) of one stage");
  EXPECT_EQ(ErrorAfter("placement 0 1", "placement 0 0"),
            "s.txt:5:1: placement: rank 1 owns no stage; every rank needs at least one; list the rank of each stage");
  EXPECT_EQ(ErrorAfter("0B1\n", "2B1\n"),
            "s.txt:6:23: stage 2 in '2B1' is out of range: the placement has 2 stages; stages are numbered 0..1; "
            "add stages to the placement line or fix the action");
  EXPECT_EQ(ErrorAfter("0B1\n", "0B2\n"),
            "s.txt:6:23: microbatch 2 in '0B2' is out of range: 'microbatches' is 2; microbatches are numbered "
            "0..1; raise 'microbatches' or fix the action");
}

TEST(TextFormatTest, KindLineErrors) {
  auto with_kind = [](std::string_view kind_line) { return ErrorAfter("rank 0:", std::string(kind_line) + "\nrank 0:"); };
  EXPECT_EQ(with_kind("kind"), "s.txt:6:5: expected a kind name after 'kind'; kind lines look like 'kind OFFLOAD "
                               "cost=0.5 memory=-1 after=F before=B,I'");
  EXPECT_EQ(with_kind("kind OFFLOAD speed=2"),
            "s.txt:6:14: unknown kind property 'speed'; properties are cost, memory, after, before and microbatch");
  EXPECT_EQ(with_kind("kind OFFLOAD cost=fast"),
            "s.txt:6:19: expected a number for cost, found 'fast'; kind lines look like 'kind OFFLOAD cost=0.5 "
            "memory=-1 after=F before=B,I'");
  EXPECT_EQ(with_kind("kind OFFLOAD after=F,RELOAD"),
            "s.txt:6:22: unknown kind 'RELOAD' in after; name built-in kinds (F, B, I, W, ...) or kinds defined on "
            "earlier lines, comma-separated");
  EXPECT_EQ(with_kind("kind OFFLOAD cost=1 cost=2"), "s.txt:6:21: 'cost' given twice; keep one");
  EXPECT_EQ(with_kind("kind OFFLOAD microbatch=maybe"),
            "s.txt:6:25: expected yes or no for microbatch, found 'maybe'; microbatch=no makes a kind that is "
            "written without a microbatch, like 0OPT");
  EXPECT_EQ(with_kind("kind F"), "s.txt:6:6: kind 'F' is already defined; pick another name");
  EXPECT_NE(with_kind("kind offload").find("is invalid"), std::string::npos);
  EXPECT_NE(with_kind("kind OFFLOAD nokey").find("expected key=value"), std::string::npos);
}

TEST(TextFormatTest, UserKindsAreUsableInRankLines) {
  std::string text(kSmallText);
  text.replace(text.find("rank 0:"), 7, "kind SAVE after=F\nrank 0:");
  text.replace(text.find("0F1"), 3, "0F1 0SAVE1");
  Result<Schedule> s = ParseScheduleText(text, "x");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->kinds.UserKinds().size(), 1u);
  EXPECT_EQ(s->programs[0][2], (Action{0, 1, s->kinds.UserKinds()[0]}));
  EXPECT_EQ(FormatScheduleText(*s), text.replace(text.find("kind SAVE after=F"), 17, "kind SAVE cost=0 memory=0 after=F"));
}

// ------------------------------------------------------------- robustness

TEST(TextFormatTest, EveryTruncationFailsCleanlyOrParses) {
  const std::string text = FormatScheduleText(Rich());
  for (size_t n = 0; n <= text.size(); ++n) {
    Result<Schedule> s = ParseScheduleText(std::string_view(text).substr(0, n), "cut.txt");
    if (s.ok()) {
      // Only a cut inside the last line can still parse, as a shorter program.
      EXPECT_GT(n, text.rfind("rank 2:")) << n;
    } else {
      EXPECT_EQ(s.status().message().rfind("cut.txt", 0), 0u) << s.status().message();
    }
  }
}

TEST(TextFormatTest, MutatedAndRandomInputNeverCrashes) {
  const std::string base = FormatScheduleText(Rich());
  std::mt19937 rng(42);
  const std::string alphabet = "0123456789 \n\r\t#.:=,-_ABFIWSENDRCVOPTGxrankplcemibtsho\xff";
  int parsed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(at, 1 + rng() % 5); break;
        default: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
      if (text.empty()) text = "x";
    }
    Result<Schedule> s = ParseScheduleText(text, "fuzz");
    if (s.ok()) {
      ++parsed;
      // Whatever parses, formats and parses back to itself.
      Result<Schedule> again = ParseScheduleText(FormatScheduleText(*s), "again");
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      EXPECT_EQ(*again, *s);
    } else {
      EXPECT_FALSE(s.status().message().empty());
    }
  }
  EXPECT_GT(parsed, 0);
  for (int i = 0; i < 2000; ++i) {
    std::string text(rng() % 200, ' ');
    for (char& c : text) c = static_cast<char>(rng() % 256);
    EXPECT_FALSE(ParseScheduleText(text, "noise").ok());
  }
}

TEST(TextFormatTest, HugeCountsDoNotAllocate) {
  Result<Schedule> s = ParseScheduleText("ranks 2000000000\nmicrobatches 2000000000\nplacement 0\nrank 0:\n", "big");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("placement lists 1 stages"), std::string::npos);
}

}  // namespace
}  // namespace pw
