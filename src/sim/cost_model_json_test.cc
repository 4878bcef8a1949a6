#include "sim/cost_model_json.h"

#include <gtest/gtest.h>

namespace pw {
namespace {

TEST(CostModelJsonTest, ParsesPerStageTableAndRoundTrips) {
  const char* text = R"({"stages": [{"F": 1, "I": 1, "W": 1, "activation_bytes": 10},
                                     {"F": 2, "B": 3, "output_bytes": 4}],
                         "comm_latency": 0.5, "static_bytes": [100, 200], "memory_cap": 1000,
                         "kind_costs": {"SEND_F": 0.1}})";
  Result<CostModel> c = ParseCostModelJson(text, "costs.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->stages.size(), 2u);
  EXPECT_DOUBLE_EQ(*c->stages[1].backward, 3.0);
  EXPECT_DOUBLE_EQ(c->stages[0].activation_bytes, 10.0);
  EXPECT_DOUBLE_EQ(c->StaticBytes(1), 200.0);
  EXPECT_DOUBLE_EQ(*c->memory_cap, 1000.0);
  Result<CostModel> again = ParseCostModelJson(FormatCostModelJson(*c), "again");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(FormatCostModelJson(*again), FormatCostModelJson(*c));
}

TEST(CostModelJsonTest, ErrorsNameTheFileAndKey) {
  struct Case { const char* text; const char* expect; };
  for (const Case& k : {Case{"{", "not valid JSON"}, Case{"[]", "must be a JSON object"},
                        Case{R"({"stages": [{"F": -1}]})", "stages[0].F"},
                        Case{R"({"stages": [{"Fwd": 1}]})", "stages[0].Fwd is not a stage cost key"},
                        Case{R"({"latency": 1})", "latency is not a cost model key"},
                        Case{R"({"stages": []})", "non-empty"}}) {
    Result<CostModel> c = ParseCostModelJson(k.text, "c.json");
    ASSERT_FALSE(c.ok()) << k.text;
    EXPECT_NE(c.status().message().find("c.json"), std::string::npos);
    EXPECT_NE(c.status().message().find(k.expect), std::string::npos) << c.status().message();
  }
  EXPECT_EQ(LoadCostModelFile("/nonexistent/x.json").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace pw
