#include "schedule/action_text.h"

#include <gtest/gtest.h>

#include <random>

namespace pw {
namespace {

TEST(ActionTextTest, ParsesBuiltinKinds) {
  KindRegistry kinds;
  EXPECT_EQ(*ParseAction("2F0", kinds), Fwd(2, 0));
  EXPECT_EQ(*ParseAction("3I1", kinds), BwdI(3, 1));
  EXPECT_EQ(*ParseAction("3W1", kinds), BwdW(3, 1));
  EXPECT_EQ(*ParseAction("1B0", kinds), Bwd(1, 0));  // PyTorch's FULL_BACKWARD
  EXPECT_EQ(*ParseAction("1SEND_F3", kinds), (Action{1, 3, ActionKind::kSendForward}));
  EXPECT_EQ(*ParseAction("2RECV_B0", kinds), (Action{2, 0, ActionKind::kRecvBackward}));
  EXPECT_EQ(*ParseAction("0REDUCE_GRAD", kinds), (Action{0, kNoMicrobatch, ActionKind::kReduceGrad}));
  EXPECT_EQ(*ParseAction("0OPT", kinds), (Action{0, kNoMicrobatch, ActionKind::kOptimizer}));
  EXPECT_EQ(*ParseAction("12F345", kinds), Fwd(12, 345));
  EXPECT_EQ(*ParseAction("02F007", kinds), Fwd(2, 7));  // Python's int() takes leading zeros too
}

TEST(ActionTextTest, ParsesUserKinds) {
  KindRegistry kinds;
  KindInfo offload;
  offload.name = "OFFLOAD";
  ActionKind k = *kinds.Register(offload);
  KindInfo sync;
  sync.name = "SYNC";
  sync.has_microbatch = false;
  ActionKind ks = *kinds.Register(sync);
  EXPECT_EQ(*ParseAction("1OFFLOAD4", kinds), (Action{1, 4, k}));
  EXPECT_EQ(*ParseAction("0SYNC", kinds), (Action{0, kNoMicrobatch, ks}));
  EXPECT_FALSE(ParseAction("1OFFLOAD4", KindRegistry()).ok());
}

TEST(ActionTextTest, FormatIsTheInverseOfParse) {
  KindRegistry kinds;
  KindInfo offload;
  offload.name = "OFFLOAD";
  ActionKind k = *kinds.Register(offload);
  for (const Action& a : {Fwd(0, 0), Bwd(3, 17), BwdI(1, 2), BwdW(1, 2), Action{4, 5, ActionKind::kSendBackward},
                          Action{2, kNoMicrobatch, ActionKind::kOptimizer}, Action{7, 1, k}}) {
    const std::string text = FormatAction(a, kinds);
    Result<Action> back = ParseAction(text, kinds);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().ToString();
    EXPECT_EQ(*back, a) << text;
  }
  EXPECT_EQ(FormatAction(Action{4, 5, ActionKind::kSendBackward}, kinds), "4SEND_B5");
  EXPECT_EQ(FormatAction(kIdleAction, kinds), "");
}

// Each bad input, and the exact message it earns.
TEST(ActionTextTest, ErrorsSayWhatWhereAndHow) {
  KindRegistry kinds;
  auto msg = [&](std::string_view text) {
    Result<Action> r = ParseAction(text, kinds);
    EXPECT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    return r.status().message();
  };
  EXPECT_EQ(msg("F0"),
            "expected a stage number, found 'F' at column 1 of 'F0'; put the stage number first; actions look "
            "like 2F0, 1SEND_F3 or 0REDUCE_GRAD");
  EXPECT_EQ(msg("2"), "expected an action kind after the stage number, found the end at column 2 of '2'; known "
                      "kinds: F B I W SEND_F RECV_F SEND_B RECV_B REDUCE_GRAD OPT; actions look like 2F0, "
                      "1SEND_F3 or 0REDUCE_GRAD");
  EXPECT_EQ(msg("2F"), "expected a microbatch number, found the end at column 3 of '2F'; F actions take one, e.g. 2F0");
  EXPECT_EQ(msg("2X0"), "unknown action kind 'X' at column 2 of '2X0'; known kinds: F B I W SEND_F RECV_F SEND_B "
                        "RECV_B REDUCE_GRAD OPT");
  EXPECT_EQ(msg("0REDUCE_GRAD1"),
            "REDUCE_GRAD takes no microbatch, found '1' at column 13 of '0REDUCE_GRAD1'; write it as 0REDUCE_GRAD");
  EXPECT_EQ(msg("2F0x"), "unexpected 'x' after the action at column 4 of '2F0x'; separate actions with blanks (text "
                         "format) or commas (CSV); actions look like 2F0, 1SEND_F3 or 0REDUCE_GRAD");
  EXPECT_NE(msg("2f0").find("kinds are upper case"), std::string::npos);
  EXPECT_NE(msg("-1F0").find("never negative"), std::string::npos);
  EXPECT_NE(msg("0IDLE").find("write an idle step as '.'"), std::string::npos);
  EXPECT_NE(msg("99999999999F0").find("too large"), std::string::npos);
  EXPECT_NE(msg("1F99999999999").find("too large"), std::string::npos);
  EXPECT_NE(msg("").find("found nothing"), std::string::npos);
  EXPECT_NE(msg("2F0 ").find("column 4"), std::string::npos);
  EXPECT_NE(msg(std::string_view("2F\0", 3)).find("byte 0x00"), std::string::npos);
}

TEST(ActionTextTest, StructuredErrorGivesColumn) {
  ActionTextError e;
  EXPECT_FALSE(ParseActionText("1SEND_Fx", KindRegistry(), &e).has_value());
  EXPECT_EQ(e.column, 8);
  EXPECT_EQ(e.problem, "expected a microbatch number, found 'x'");
  // A null error pointer is allowed.
  EXPECT_FALSE(ParseActionText("?", KindRegistry(), nullptr).has_value());
}

TEST(ActionTextTest, GarbageNeverCrashes) {
  KindRegistry kinds;
  std::mt19937 rng(7);
  const std::string alphabet = "0123456789FBIWSEND_RCVOPTGAX \t,.#-\xff";
  for (int i = 0; i < 20000; ++i) {
    std::string s(rng() % 12, ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    Result<Action> r = ParseAction(s, kinds);
    if (r.ok()) {
      EXPECT_EQ(*ParseAction(FormatAction(*r, kinds), kinds), *r) << s;
    } else {
      EXPECT_FALSE(r.status().message().empty());
    }
  }
}

}  // namespace
}  // namespace pw
