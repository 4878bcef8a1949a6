#include "viz/sim_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

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

namespace pw {
namespace {

// The shortest text that reads back as the same double, laid out as
// nlohmann lays out its own digits (whose Grisu2 digits are sometimes one
// or two longer than the shortest: "1.6588000000000001e-09").
TEST(SimJsonTest, DoublesReadBackExactlyInNlohmannsLayout) {
  std::vector<double> values = {0.0, -0.0, 1.0, 27.0, 0.5, 1e-4, 1e-5, 0.000123, 1234.5, 1e15, 1e16, 123456789012345.0,
                                1234567890123456.0, 1e300, -2.5e-300, 1.0 / 3, 0.1, 1048576.0, 1e6, 100000000.0,
                                std::numeric_limits<double>::infinity(), std::nan("")};
  uint64_t state = 12345;
  for (int i = 0; i < 2000; ++i) {  // random bit patterns and random magnitudes
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    double v;
    std::memcpy(&v, &state, sizeof v);
    values.push_back(v);
    values.push_back(static_cast<double>(state % 100000) * std::pow(10.0, static_cast<int>(state >> 58) - 32));
  }
  int same_text = 0;
  for (double v : values) {
    char text[64];
    const std::string ours(FormatJsonDouble(v, text));
    const std::string theirs = nlohmann::json(v).dump();
    if (!std::isfinite(v)) {
      EXPECT_EQ(ours, "null");
      continue;
    }
    EXPECT_EQ(nlohmann::json::parse(ours).get<double>(), v) << ours;
    EXPECT_LE(ours.size(), theirs.size()) << ours << " vs " << theirs;
    // Same notation: both fixed or both scientific, ".0" on integral values.
    EXPECT_EQ(ours.find('e') == std::string::npos, theirs.find('e') == std::string::npos) << ours << " vs " << theirs;
    same_text += ours == theirs;
  }
  EXPECT_GT(same_text, static_cast<int>(values.size()) / 2);
  char text[64];
  EXPECT_EQ(std::string(FormatJsonDouble(27.0, text)), "27.0");
  EXPECT_EQ(std::string(FormatJsonDouble(1e6, text)), "1000000.0");
  EXPECT_EQ(std::string(FormatJsonDouble(1e-5, text)), "1e-05");
  EXPECT_EQ(std::string(FormatJsonDouble(0.0001, text)), "0.0001");
  EXPECT_EQ(std::string(FormatJsonDouble(1e16, text)), "1e+16");
}

TEST(SimJsonTest, FileGetsTheWholeTextAndANewline) {
  for (std::optional<double> cap : {std::optional<double>(), std::optional<double>(1100)}) {
    const Schedule s = testing_viz::OneFOneB(4, 8);
    const CostModel costs = TinyCosts(cap);
    CostModel resolved = costs;
    const SimResult sim = testing_viz::SimulateOrDie(s, resolved);
    std::FILE* file = std::tmpfile();
    ASSERT_NE(file, nullptr);
    ASSERT_TRUE(WriteSimResultJson(file, s, sim, costs).ok());
    std::rewind(file);
    std::string text;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, file)) > 0;) text.append(buf, n);
    std::fclose(file);
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '\n');
    EXPECT_EQ(text, SimResultToJson(s, sim, costs).dump() + "\n");  // these numbers print alike
  }
}

}  // namespace
}  // namespace pw
