#include "viz/summary.h"

#include <gtest/gtest.h>

#include "viz/viz_test_util.h"

namespace pw {
namespace {

using testing_viz::OneFOneB;
using testing_viz::SimulateOrDie;

TEST(SummaryTest, TableOfRanks) {
  // p=2, m=1, F=1, B=2; 512 MiB of activations on 1 GiB static, cap 1.5 GiB:
  // both ranks peak at exactly the cap; rank 0 has one bubble, rank 1 two.
  const Schedule s = OneFOneB(2, 1);
  CostModel costs;
  costs.stages[0].activation_bytes = 512.0 * (1 << 20);
  costs.static_bytes = {1024.0 * (1 << 20)};
  costs.memory_cap = 1536.0 * (1 << 20);
  const SimResult sim = SimulateOrDie(s, costs);
  EXPECT_EQ(RenderSimSummary(s, sim, costs),
            "1f1b: 2 ranks, 2 stages (sequential), 1 microbatch, 4 actions\n"
            "makespan 6, bubble ratio 50.0%\n"
            "memory cap 1.5 GiB per rank: respected\n"
            "rank  busy  idle %  peak memory  bubbles\n"
            "   0     3   50.0%      1.5 GiB        1\n"
            "   1     3   50.0%      1.5 GiB        2\n");
}

TEST(SummaryTest, NamesRanksOverTheCap) {
  const Schedule s = OneFOneB(2, 1);
  CostModel costs;
  costs.stages[0].activation_bytes = 100;
  costs.memory_cap = 50;
  const SimResult sim = SimulateOrDie(s, costs);
  const std::string text = RenderSimSummary(s, sim, costs);
  EXPECT_NE(text.find("memory cap 50 B per rank: EXCEEDED on rank 0, 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("100 B (over cap)"), std::string::npos) << text;
}

}  // namespace
}  // namespace pw
