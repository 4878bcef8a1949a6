#include "sim/cost_model_json.h"

#include <gtest/gtest.h>

namespace pw {
namespace {

TEST(CostModelJsonTest, ParsesPerStageTableAndRoundTrips) {
  const char* text = R"({"stages": [{"F": 1, "I": 1, "W": 1, "activation_bytes": 10},
                                     {"F": 2, "B": 3, "output_bytes": 4}],
                         "comm_latency": 0.5, "static_bytes": [100, 200], "memory_cap": 1000,
                         "kind_costs": {"SEND_F": 0.1}, "host_bandwidth": 25e6,
                         "action_overhead": 0.002})";
  Result<CostModel> c = ParseCostModelJson(text, "costs.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->stages.size(), 2u);
  EXPECT_DOUBLE_EQ(*c->stages[1].backward, 3.0);
  EXPECT_DOUBLE_EQ(c->stages[0].activation_bytes, 10.0);
  EXPECT_DOUBLE_EQ(c->StaticBytes(1), 200.0);
  EXPECT_DOUBLE_EQ(*c->memory_cap, 1000.0);
  EXPECT_DOUBLE_EQ(c->host_bandwidth, 25e6);
  EXPECT_DOUBLE_EQ(c->action_overhead, 0.002);
  Result<CostModel> again = ParseCostModelJson(FormatCostModelJson(*c), "again");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(FormatCostModelJson(*again), FormatCostModelJson(*c));
}

// A profile of a recomputing run: RECOMPUTE and the after-recompute
// backward, read and written back.
TEST(CostModelJsonTest, RecomputationsOwnTimesRoundTrip) {
  const char* text = R"({"stages": [{"F": 1, "I": 1, "W": 1, "RECOMPUTE": 0.9, "I_after_recompute": 0.8,
                                      "W_after_recompute": 0.7}, {"F": 2, "B": 3, "B_after_recompute": 2.5}]})";
  Result<CostModel> c = ParseCostModelJson(text, "costs.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(*c->stages[0].recompute, 0.9);
  EXPECT_DOUBLE_EQ(*c->stages[0].backward_input_after_recompute, 0.8);
  EXPECT_DOUBLE_EQ(*c->stages[0].backward_weight_after_recompute, 0.7);
  EXPECT_FALSE(c->stages[0].backward_after_recompute.has_value());
  EXPECT_DOUBLE_EQ(*c->stages[1].backward_after_recompute, 2.5);
  EXPECT_FALSE(c->stages[1].recompute.has_value());
  Result<CostModel> again = ParseCostModelJson(FormatCostModelJson(*c), "again");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(FormatCostModelJson(*again), FormatCostModelJson(*c));
  EXPECT_DOUBLE_EQ(*again->stages[0].backward_weight_after_recompute, 0.7);
}

TEST(CostModelJsonTest, ErrorsNameTheFileAndKey) {
  struct Case { const char* text; const char* expect; };
  for (const Case& k : {Case{"{", "not valid JSON"}, Case{"[]", "must be a JSON object"},
                        Case{R"({"stages": [{"F": -1}]})", "stages[0].F"},
                        Case{R"({"stages": [{"Fwd": 1}]})", "stages[0].Fwd is not a stage cost key"},
                        Case{R"({"stages": [{"F": 1, "I_after_recompute": -2}]})", "stages[0].I_after_recompute"},
                        Case{R"({"latency": 1})", "latency is not a cost model key"},
                        Case{R"({"stages": []})", "non-empty"}}) {
    Result<CostModel> c = ParseCostModelJson(k.text, "c.json");
    ASSERT_FALSE(c.ok()) << k.text;
    EXPECT_NE(c.status().message().find("c.json"), std::string::npos);
    EXPECT_NE(c.status().message().find(k.expect), std::string::npos) << c.status().message();
  }
  EXPECT_EQ(LoadCostModelFile("/nonexistent/x.json").status().code(), StatusCode::kNotFound);
}

TEST(CostModelJsonTest, ProfilesCarryPerLayerCosts) {
  const char* text = R"({"stages": [{"F": 3, "B": 6}, {"F": 5, "B": 10}],
                         "n_layers": 3,
                         "layers": [{"F": 2, "B": 4, "output_bytes": 8}, {"F": 1, "B": 2},
                                    {"F": 5, "B": 10}]})";
  Result<CostFile> f = ParseCostFileJson(text, "prof.json");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->layers.size(), 3u);
  EXPECT_DOUBLE_EQ(*f->layers[2].backward, 10.0);
  EXPECT_DOUBLE_EQ(f->layers[0].output_bytes, 8.0);
  EXPECT_EQ(f->costs.stages.size(), 2u);
  // The simulator's reader accepts the file and keeps the stages.
  Result<CostModel> c = ParseCostModelJson(text, "prof.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->stages.size(), 2u);
  // Round trip, with and without layers.
  const std::string formatted = FormatCostFileJson(*f);
  EXPECT_NE(formatted.find("\"n_layers\": 3"), std::string::npos) << formatted;
  Result<CostFile> again = ParseCostFileJson(formatted, "again");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(FormatCostFileJson(*again), formatted);
  EXPECT_EQ(FormatCostModelJson(f->costs).find("layers"), std::string::npos);
}

TEST(CostModelJsonTest, LayerKeysAreChecked) {
  struct Case { const char* text; const char* expect; };
  for (const Case& k : {Case{R"({"n_layers": 2})", "\"n_layers\" and \"layers\" go together"},
                        Case{R"({"layers": [{"F": 1}]})", "go together"},
                        Case{R"({"n_layers": 2, "layers": [{"F": 1}]})", "n_layers is 2 but \"layers\" has 1"},
                        Case{R"({"n_layers": 0, "layers": [{"F": 1}]})", "n_layers must be a positive whole number"},
                        Case{R"({"n_layers": 1.5, "layers": [{"F": 1}]})", "positive whole number"},
                        Case{R"({"n_layers": 1, "layers": []})", "layers must be a non-empty list"},
                        Case{R"({"n_layers": 1, "layers": [{"Fw": 1}]})", "layers[0].Fw is not a stage cost key"},
                        Case{R"({"nlayers": 1})", "nlayers is not a cost model key"}}) {
    Result<CostFile> f = ParseCostFileJson(k.text, "p.json");
    ASSERT_FALSE(f.ok()) << k.text;
    EXPECT_NE(f.status().message().find("p.json"), std::string::npos);
    EXPECT_NE(f.status().message().find(k.expect), std::string::npos) << f.status().message();
  }
}

}  // namespace
}  // namespace pw
