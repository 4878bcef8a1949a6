#include "viz/sim_json.h"

#include <gtest/gtest.h>

#include "viz/viz_test_util.h"

namespace pw {
namespace {

using nlohmann::json;
using testing_viz::OneFOneB;
using testing_viz::SimulateOrDie;

// p=2, m=1, F=1, B=2, 100 bytes of activations per stage, 1000 static:
//   rank 0: F0 [0,1], idle [1,4] holding 1100 bytes, B0 [4,6]
//   rank 1: idle [0,1] holding 1000, F0 [1,2], B0 [2,4], idle [4,6] holding 1000
CostModel TinyCosts(std::optional<double> cap) {
  CostModel costs;
  costs.stages[0].activation_bytes = 100;
  costs.static_bytes = {1000};
  costs.memory_cap = cap;
  return costs;
}

TEST(SimJsonTest, HandCheckedTinyCase) {
  const Schedule s = OneFOneB(2, 1);
  const CostModel costs = TinyCosts(1100);
  CostModel resolved = costs;
  const SimResult sim = SimulateOrDie(s, resolved);
  const json j = SimResultToJson(s, sim, costs);
  EXPECT_EQ(j["schedule"], "1f1b");
  EXPECT_EQ(j["placement"], "sequential");
  EXPECT_EQ(j["num_ranks"], 2);
  EXPECT_EQ(j["num_stages"], 2);
  EXPECT_EQ(j["num_microbatches"], 1);
  EXPECT_EQ(j["num_actions"], 4);
  EXPECT_EQ(j["makespan"], 6.0);
  EXPECT_EQ(j["bubble_ratio"], 0.5);
  EXPECT_EQ(j["memory_cap"], 1100.0);
  EXPECT_EQ(j["memory_cap_violated"], false);
  ASSERT_EQ(j["ranks"].size(), 2u);

  const json& r0 = j["ranks"][0];
  EXPECT_EQ(r0["rank"], 0);
  EXPECT_EQ(r0["busy"], 3.0);
  EXPECT_EQ(r0["idle"], 3.0);
  EXPECT_EQ(r0["peak_memory"], 1100.0);
  EXPECT_EQ(r0["memory_cap_violated"], false);
  EXPECT_EQ(r0["bubbles"], json::parse("[[1.0, 4.0]]"));
  EXPECT_EQ(r0["bubble_memory"],
            json::parse(R"([{"start": 1.0, "end": 4.0, "memory_used": 1100.0, "free_memory": 0.0}])"));

  const json& r1 = j["ranks"][1];
  EXPECT_EQ(r1["bubbles"], json::parse("[[0.0, 1.0], [4.0, 6.0]]"));
  EXPECT_EQ(r1["bubble_memory"], json::parse(R"([
      {"start": 0.0, "end": 1.0, "memory_used": 1000.0, "free_memory": 100.0},
      {"start": 4.0, "end": 6.0, "memory_used": 1000.0, "free_memory": 100.0}])"));
}

TEST(SimJsonTest, CapViolationsAndNoCap) {
  const Schedule s = OneFOneB(2, 1);
  CostModel tight = TinyCosts(1050);
  const SimResult over = SimulateOrDie(s, tight);
  const json j = SimResultToJson(s, over, tight);
  EXPECT_EQ(j["memory_cap_violated"], true);
  EXPECT_EQ(j["ranks"][0]["memory_cap_violated"], true);
  EXPECT_EQ(j["ranks"][0]["bubble_memory"][0]["free_memory"], -50.0);

  CostModel uncapped = TinyCosts(std::nullopt);
  const SimResult free = SimulateOrDie(s, uncapped);
  const json k = SimResultToJson(s, free, uncapped);
  EXPECT_TRUE(k["memory_cap"].is_null());
  EXPECT_TRUE(k["ranks"][1]["bubble_memory"][0]["free_memory"].is_null());
}

}  // namespace
}  // namespace pw
