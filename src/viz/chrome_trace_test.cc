#include "viz/chrome_trace.h"

#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "viz/viz_test_util.h"

namespace pw {
namespace {

using nlohmann::json;
using testing_viz::OneFOneB;
using testing_viz::SimulateOrDie;

TEST(ChromeTraceTest, OneCompleteEventPerActionWithTimesInMicroseconds) {
  const Schedule s = OneFOneB(3, 4);
  const SimResult sim = SimulateOrDie(s);
  const json trace = json::parse(RenderChromeTrace(s, sim));
  ASSERT_TRUE(trace.contains("traceEvents"));
  std::map<std::pair<int, std::string>, json> actions;  // (tid, name) -> event
  size_t bubbles = 0;
  std::map<int, std::string> thread_names;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names[e["tid"].get<int>()] = e["args"]["name"];
    if (e["ph"] != "X") continue;
    EXPECT_EQ(e["pid"], 0);
    if (e["cat"] == "bubble") {
      ++bubbles;
      continue;
    }
    actions[{e["tid"].get<int>(), e["name"].get<std::string>()}] = e;
  }
  EXPECT_EQ(actions.size(), s.NumActions());
  EXPECT_EQ(thread_names, (std::map<int, std::string>{{0, "rank 0"}, {1, "rank 1"}, {2, "rank 2"}}));
  size_t sim_bubbles = 0;
  for (const RankSimResult& r : sim.ranks) sim_bubbles += r.bubbles.size();
  EXPECT_EQ(bubbles, sim_bubbles);

  for (int r = 0; r < 3; ++r) {
    for (size_t i = 0; i < s.programs[r].size(); ++i) {
      const Action& a = s.programs[r][i];
      const json& e = actions.at({r, s.ActionName(a)});
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), sim.spans[r][i].start * 1000);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), (sim.spans[r][i].end - sim.spans[r][i].start) * 1000);
      EXPECT_EQ(e["cat"], std::string(s.kinds.Name(a.kind)));
      EXPECT_EQ(e["args"]["stage"], a.stage);
      EXPECT_EQ(e["args"]["microbatch"], a.microbatch);
    }
  }
  // Spot check: rank 2 (last stage) runs 2B0 over [3, 5] with F=1, B=2.
  EXPECT_EQ(actions.at({2, "2B0"})["ts"], 3000);
  EXPECT_EQ(actions.at({2, "2B0"})["dur"], 2000);
}

TEST(ChromeTraceTest, TimeUnitScalesAndBubblesCanBeLeftOut) {
  const Schedule s = OneFOneB(2, 2);
  const SimResult sim = SimulateOrDie(s);
  TraceOptions options;
  options.time_unit_us = 2.5;
  options.bubbles = false;
  const json trace = json::parse(RenderChromeTrace(s, sim, options));
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_NE(e["cat"], "bubble");
    if (e["tid"] == 1 && e["name"] == "1B0") {
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 5.0);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 5.0);
    }
  }
  EXPECT_EQ(trace["otherData"]["makespan"], 9);
}

TEST(ChromeTraceTest, BubbleEventsCarryMemory) {
  const Schedule s = OneFOneB(2, 1);
  CostModel costs;
  costs.stages[0].activation_bytes = 100;
  costs.memory_cap = 1000;
  const SimResult sim = SimulateOrDie(s, costs);
  const json trace = json::parse(RenderChromeTrace(s, sim));
  // Rank 0 waits over [1, 4] holding one microbatch's activations.
  bool found = false;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "bubble" && e["tid"] == 0) {
      EXPECT_EQ(e["name"], "bubble");
      EXPECT_EQ(e["ts"], 1000);
      EXPECT_EQ(e["dur"], 3000);
      EXPECT_EQ(e["args"]["memory_used"], 100);
      EXPECT_EQ(e["args"]["free_memory"], 900);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(ChromeTraceTest, EscapesTheScheduleName) {
  const Schedule s = OneFOneB(2, 1, false, "a \"quoted\"\\name");
  const json trace = json::parse(RenderChromeTrace(s, SimulateOrDie(s)));
  EXPECT_EQ(trace["traceEvents"][0]["args"]["name"], "pipewright a \"quoted\"\\name");
}

}  // namespace
}  // namespace pw
