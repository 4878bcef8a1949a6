// Side work a schedule's bubbles hold for a task of fixed steps, and the
// profile file; checked on hand-made bubbles.
#include "search/harvest_score.h"

#include <gtest/gtest.h>

namespace pw::search {
namespace {

SimResult WithBubbles(std::vector<std::vector<Bubble>> bubbles) {
  SimResult sim;
  for (auto& b : bubbles) {
    RankSimResult rank;
    rank.bubbles = std::move(b);
    sim.ranks.push_back(std::move(rank));
  }
  return sim;
}

TEST(HarvestScoreTest, ABubbleHoldsWholeStepsOnly) {
  // Rank 0: one bubble of 10 (holds 2 steps of 4); rank 1: five of 2 (none).
  SimResult sim = WithBubbles({{{0, 10, 0, {}}}, {{0, 2, 0, {}}, {3, 5, 0, {}}, {6, 8, 0, {}}, {9, 11, 0, {}}, {12, 14, 0, {}}}});
  BubbleWork w = SideWork(sim, SideTaskProfile{4, 0});
  EXPECT_EQ(w.per_rank, (std::vector<double>{8, 0}));
  EXPECT_DOUBLE_EQ(w.total, 8);
  EXPECT_DOUBLE_EQ(w.best_rank, 8);
  // A step of 2 fills every bubble when a step may start in the last
  // step's time of one (margin 1): 10 on each rank.
  w = SideWork(sim, SideTaskProfile{2, 0, 1.0});
  EXPECT_EQ(w.per_rank, (std::vector<double>{10, 10}));
  // With the runtime's default margin (1.2) a step starts only when 1.2
  // steps are left: rank 0's bubble holds 4 (the 5th would start with 2
  // left), rank 1's bubbles of exactly one step hold none.
  w = SideWork(sim, SideTaskProfile{2, 0});
  EXPECT_EQ(w.per_rank, (std::vector<double>{8, 0}));
  // A margin below 1 counts as 1: no step counts beyond its bubble.
  EXPECT_EQ(SideWork(sim, SideTaskProfile{2, 0, 0.0}).per_rank, (std::vector<double>{10, 10}));
}

TEST(HarvestScoreTest, BubblesWithoutRoomHoldNothing) {
  SimResult sim = WithBubbles({{{0, 10, 0, 50.0}, {20, 30, 0, 150.0}}});
  EXPECT_DOUBLE_EQ(SideWork(sim, SideTaskProfile{5, 100, 1.0}).total, 10);
  EXPECT_DOUBLE_EQ(SideWork(sim, SideTaskProfile{5, 0, 1.0}).total, 20);
}

TEST(HarvestScoreTest, ProfileFileErrorsSayWhatToFix) {
  Result<SideTaskProfile> p = ParseSideTaskProfileJson(R"({"step": 20, "memory_bytes": 1e8})", "t.json");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_DOUBLE_EQ(p->step, 20);
  EXPECT_DOUBLE_EQ(p->memory_bytes, 1e8);
  EXPECT_DOUBLE_EQ(p->margin, 1.2) << "train's default --harvest-step-margin";
  p = ParseSideTaskProfileJson(R"({"step": 20, "margin": 1.5})", "t.json");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_DOUBLE_EQ(p->margin, 1.5);
  EXPECT_NE(ParseSideTaskProfileJson(R"({"step": 1, "margin": -1})", "t.json").status().message().find(
                "margin must be >= 0"),
            std::string::npos);
  EXPECT_NE(ParseSideTaskProfileJson("{}", "t.json").status().message().find("\"step\" is missing"),
            std::string::npos);
  EXPECT_NE(ParseSideTaskProfileJson(R"({"step": 0})", "t.json").status().message().find("must be positive"),
            std::string::npos);
  EXPECT_NE(ParseSideTaskProfileJson(R"({"step": 1, "stp": 2})", "t.json").status().message().find(
                "stp is not a side-task profile key"),
            std::string::npos);
  EXPECT_NE(ParseSideTaskProfileJson("[", "t.json").status().message().find("t.json: not valid JSON"),
            std::string::npos);
}

}  // namespace
}  // namespace pw::search
