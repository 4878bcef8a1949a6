// Timeline, measured trace and measured profile: pure parts,
// on hand-made spans with known durations.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/profile.h"
#include "runtime/timeline.h"
#include "sim/cost_model_json.h"

namespace pw {
namespace {

TimelineSpan Span(ActionKind kind, int stage, int mb, int64_t step, double start_us, double dur_us,
                  double origin_us = 0) {
  TimelineSpan s;
  s.kind = kind;
  s.stage = stage;
  s.microbatch = mb;
  s.step = step;
  s.step_origin_us = origin_us;
  s.start_us = start_us;
  s.dur_us = dur_us;
  return s;
}

// Two ranks, one stage each, two microbatches, three steps (step 0 is slow).
// Forward of stage s, steps >= 1: mb 0 takes (s+1) ms, mb 1 (s+1)*3 ms -> mean 2(s+1) ms.
std::vector<std::vector<TimelineSpan>> TwoRankSpans(bool split) {
  std::vector<std::vector<TimelineSpan>> ranks(2);
  for (int64_t step = 0; step < 3; ++step) {
    for (int s = 0; s < 2; ++s) {
      const double scale = step == 0 ? 100.0 : 1.0;
      const double unit = 1000.0 * (s + 1) * scale;
      for (int mb = 0; mb < 2; ++mb) {
        const double f = mb == 0 ? unit : 3 * unit;
        ranks[s].push_back(Span(ActionKind::kForward, s, mb, step, 0, f, 1e6 * step));
        if (split) {
          ranks[s].push_back(Span(ActionKind::kBackwardInput, s, mb, step, f, unit, 1e6 * step));
          ranks[s].push_back(Span(ActionKind::kBackwardWeight, s, mb, step, f + unit, 0.5 * unit, 1e6 * step));
        } else {
          ranks[s].push_back(Span(ActionKind::kBackward, s, mb, step, f, 2 * unit, 1e6 * step));
        }
      }
      ranks[s].push_back(Span(ActionKind::kOptimizer, s, kNoMicrobatch, step, 9000, 10, 1e6 * step));
    }
  }
  return ranks;
}

TEST(MeasuredProfile, MeansAfterWarmupRoundTripThroughCostModelJson) {
  ProfileOptions options;
  options.output_bytes = 2 * 16 * 32 * 4;
  Result<CostModel> costs = MeasuredProfile(TwoRankSpans(false), 2, options);
  ASSERT_TRUE(costs.ok()) << costs.status().ToString();
  Result<CostModel> parsed = ParseCostModelJson(FormatCostModelJson(*costs), "profile.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->stages.size(), 2u);
  for (int s = 0; s < 2; ++s) {
    const StageCost& c = parsed->stages[s];
    ASSERT_TRUE(c.forward.has_value());
    ASSERT_TRUE(c.backward.has_value());
    EXPECT_DOUBLE_EQ(*c.forward, 2.0 * (s + 1));
    EXPECT_DOUBLE_EQ(*c.backward, 2.0 * (s + 1));
    EXPECT_FALSE(c.backward_input.has_value());
    EXPECT_DOUBLE_EQ(c.output_bytes, options.output_bytes);
  }
}

TEST(MeasuredProfile, SplitBackwardGivesIAndW) {
  Result<CostModel> costs = MeasuredProfile(TwoRankSpans(true), 2);
  ASSERT_TRUE(costs.ok()) << costs.status().ToString();
  Result<CostModel> parsed = ParseCostModelJson(FormatCostModelJson(*costs), "profile.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const StageCost& c = parsed->stages[1];
  ASSERT_TRUE(c.backward_input.has_value() && c.backward_weight.has_value());
  EXPECT_DOUBLE_EQ(*c.forward, 4.0);
  EXPECT_DOUBLE_EQ(*c.backward_input, 2.0);
  EXPECT_DOUBLE_EQ(*c.backward_weight, 1.0);
}

TEST(MeasuredProfile, OneStepCountsWhenNothingFollowsTheWarmup) {
  std::vector<std::vector<TimelineSpan>> ranks = {
      {Span(ActionKind::kForward, 0, 0, 0, 0, 1500), Span(ActionKind::kBackward, 0, 0, 0, 1500, 3000)}};
  Result<CostModel> costs = MeasuredProfile(ranks, 1);
  ASSERT_TRUE(costs.ok()) << costs.status().ToString();
  EXPECT_DOUBLE_EQ(*costs->stages[0].forward, 1.5);
  EXPECT_DOUBLE_EQ(*costs->stages[0].backward, 3.0);
}

TEST(MeasuredProfile, MissingStageIsAnError) {
  Result<CostModel> costs = MeasuredProfile(TwoRankSpans(false), 3);
  ASSERT_FALSE(costs.ok());
  EXPECT_NE(costs.status().ToString().find("stage 2"), std::string::npos);
  EXPECT_FALSE(MeasuredProfile({}, 1).ok());
}

TEST(RenderMeasuredTrace, OneCompleteEventPerActionPlusWaits) {
  Result<Placement> placement = Placement::Sequential(2);
  ASSERT_TRUE(placement.ok());
  Schedule schedule = MakeEmptySchedule("measured", *placement, 2);
  std::vector<std::vector<TimelineSpan>> ranks = TwoRankSpans(false);
  // A blocking receive on rank 1 (long: a wait event) and a short one (no wait event).
  ranks[1].push_back(Span(ActionKind::kRecvForward, 1, 0, 1, 0, 500, 1e6));
  ranks[1].push_back(Span(ActionKind::kRecvBackward, 1, 1, 1, 0, 1, 1e6));
  // Rank 1's OPT waited 300 us for the gradient norm, 40 us in: a wait
  // event over that part of the span.
  TimelineSpan opt = Span(ActionKind::kOptimizer, 1, kNoMicrobatch, 1, 0, 400, 3e6);
  opt.wait_offset_us = 40;
  opt.wait_us = 300;
  ranks[1].push_back(opt);
  // Rank 1 started its steps 7 us later: each rank places its own steps.
  for (TimelineSpan& s : ranks[1]) s.step_origin_us += 7;
  size_t spans = ranks[0].size() + ranks[1].size();

  const std::string text = RenderMeasuredTrace(schedule, ranks);
  nlohmann::json doc = nlohmann::json::parse(text);  // throws on malformed JSON
  size_t actions = 0, waits = 0, threads = 0;
  bool saw_f = false;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") ++threads;
    if (e["ph"] != "X") continue;
    if (e["cat"] == "wait") {
      ++waits;
      EXPECT_EQ(e["tid"], 1);
      if (e["name"] == "wait" && e["dur"].get<double>() == 300) {
        EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 3e6 + 7 + 40);  // inside the OPT span
      } else {
        EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 500);
      }
      continue;
    }
    ++actions;
    EXPECT_EQ(e["pid"], 0);
    if (e["name"] == "1F1" && e["args"]["step"] == 2) {
      saw_f = true;
      EXPECT_EQ(e["cat"], "F");
      EXPECT_EQ(e["tid"], 1);
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 2e6 + 7);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 6000);
      EXPECT_EQ(e["args"]["stage"], 1);
      EXPECT_EQ(e["args"]["microbatch"], 1);
    }
    if (e["cat"] == "OPT") {
      EXPECT_TRUE(e["args"]["microbatch"].is_null());
    }
  }
  EXPECT_TRUE(saw_f);
  EXPECT_EQ(actions, spans);
  EXPECT_EQ(waits, 2u);
  EXPECT_EQ(threads, 2u);
  EXPECT_EQ(doc["otherData"]["actions"], spans);
}

TEST(Timeline, RecordsSpansRelativeToTheStepOrigin) {
  using Clock = Timeline::Clock;
  Timeline timeline;
  const Clock::time_point t0 = Clock::now();
  timeline.BeginStep(0, t0);
  timeline.Add(Fwd(1, 2), t0 + std::chrono::microseconds(100), t0 + std::chrono::microseconds(350));
  timeline.BeginStep(1, t0 + std::chrono::milliseconds(5));
  timeline.Add(Action{1, kNoMicrobatch, ActionKind::kOptimizer}, t0 + std::chrono::milliseconds(6),
               t0 + std::chrono::milliseconds(7), t0 + std::chrono::microseconds(6100),
               t0 + std::chrono::microseconds(6800));
  ASSERT_EQ(timeline.spans().size(), 2u);
  const TimelineSpan& a = timeline.spans()[0];
  EXPECT_EQ(a.kind, ActionKind::kForward);
  EXPECT_EQ(a.stage, 1);
  EXPECT_EQ(a.microbatch, 2);
  EXPECT_EQ(a.step, 0);
  EXPECT_DOUBLE_EQ(a.start_us, 100);
  EXPECT_DOUBLE_EQ(a.dur_us, 250);
  const TimelineSpan& b = timeline.spans()[1];
  EXPECT_EQ(b.step, 1);
  EXPECT_DOUBLE_EQ(b.step_origin_us, 5000);
  EXPECT_DOUBLE_EQ(b.start_us, 1000);
  EXPECT_DOUBLE_EQ(b.dur_us, 1000);
  EXPECT_DOUBLE_EQ(b.wait_offset_us, 100);
  EXPECT_DOUBLE_EQ(b.wait_us, 700);
  EXPECT_DOUBLE_EQ(a.wait_us, 0);  // no wait given

  // Without a group, gathering returns the local spans.
  Result<std::vector<std::vector<TimelineSpan>>> all = GatherTimelines(nullptr, 0, timeline);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].size(), 2u);
}

}  // namespace
}  // namespace pw
