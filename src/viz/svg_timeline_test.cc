#include "viz/svg_timeline.h"

#include <chrono>

#include <gtest/gtest.h>

#include "viz/viz_test_util.h"

namespace pw {
namespace {

using testing_viz::Count;
using testing_viz::OneFOneB;
using testing_viz::SimulateOrDie;

// Action boxes carry a style class "s<n>"; legend swatches are "key s<n>".
constexpr const char* kActionBox = "<rect class=\"s";

TEST(SvgTimelineTest, IsStandaloneSvgWithOneLanePerRankAndOneBoxPerAction) {
  const Schedule s = OneFOneB(3, 4);
  const SimResult sim = SimulateOrDie(s);
  const std::string svg = RenderTimelineSvg(s, sim);
  ASSERT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u) << svg.substr(0, 80);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(Count(svg, "class=\"lane"), 3u);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(Count(svg, ">rank " + std::to_string(r) + "</text>"), 1u);
  EXPECT_EQ(Count(svg, kActionBox), s.NumActions());
  // Tags balance (a cheap well-formedness check; xmllint agrees in practice).
  EXPECT_EQ(Count(svg, "<text"), Count(svg, "</text>"));
  EXPECT_EQ(Count(svg, "<title>"), Count(svg, "</title>"));
  EXPECT_EQ(Count(svg, "<svg"), 1u);
  // Title line with name, p, m, makespan (3 * (m + p - 1) = 18) and bubble ratio.
  EXPECT_NE(svg.find("1f1b \u2014 p=3, m=4, makespan 18, bubble ratio 33.3%"), std::string::npos);
  // One hatched bubble per idle interval, and a legend naming the kinds.
  size_t bubbles = 0;
  for (const RankSimResult& r : sim.ranks) bubbles += r.bubbles.size();
  EXPECT_EQ(Count(svg, "<rect class=\"bubble\""), bubbles);
  EXPECT_NE(svg.find(">F forward</text>"), std::string::npos);
  EXPECT_NE(svg.find(">B backward</text>"), std::string::npos);
  EXPECT_EQ(svg.find("I backward"), std::string::npos);  // no split backward here
}

TEST(SvgTimelineTest, TooltipsNameRankActionAndSpan) {
  const Schedule s = OneFOneB(2, 2);
  const SimResult sim = SimulateOrDie(s);
  const std::string svg = RenderTimelineSvg(s, sim);
  // Rank 1's B of microbatch 0 runs over [2, 4] (F=1, B=2).
  EXPECT_NE(svg.find("<title>rank 1 1B0 2..4</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>rank 0 bubble 2..4 (2)"), std::string::npos);
}

TEST(SvgTimelineTest, EscapesText) {
  const Schedule s = OneFOneB(2, 2, false, "<mine> & \"yours\"");
  const SimResult sim = SimulateOrDie(s);
  const std::string svg = RenderTimelineSvg(s, sim);
  EXPECT_EQ(svg.find("<mine>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;mine&gt; &amp; &quot;yours&quot;"), std::string::npos);
}

TEST(SvgTimelineTest, WidthGrowsWithMakespanUpToTheCap) {
  auto width = [](const std::string& svg) {
    const size_t at = svg.find("width=\"") + 7;
    return std::stod(svg.substr(at, svg.find('"', at) - at));
  };
  const Schedule small = OneFOneB(2, 2);
  const Schedule mid = OneFOneB(2, 12);
  const Schedule big = OneFOneB(2, 200);
  const double w_small = width(RenderTimelineSvg(small, SimulateOrDie(small)));
  const double w_mid = width(RenderTimelineSvg(mid, SimulateOrDie(mid)));
  const double w_big = width(RenderTimelineSvg(big, SimulateOrDie(big)));
  EXPECT_GE(w_small, SvgOptions{}.min_width);
  EXPECT_GT(w_mid, w_small);
  EXPECT_LE(w_big, SvgOptions{}.max_width);
}

TEST(SvgTimelineTest, LabelsShowMicrobatchesAndSkipNarrowBoxes) {
  const Schedule s = OneFOneB(2, 2);
  const SimResult sim = SimulateOrDie(s);
  const std::string svg = RenderTimelineSvg(s, sim);
  EXPECT_EQ(Count(svg, "class=\"lbl"), s.NumActions());
  SvgOptions narrow;
  narrow.px_per_time_unit = 1;
  narrow.min_width = 1;
  narrow.max_width = 120;  // boxes of a few px: no room for text
  EXPECT_EQ(Count(RenderTimelineSvg(s, sim, narrow), "class=\"lbl"), 0u);
}

TEST(SvgTimelineTest, SplitBackwardAndChunksGetTheirOwnStyles) {
  const Schedule split = OneFOneB(2, 2, /*split=*/true);
  const std::string svg = RenderTimelineSvg(split, SimulateOrDie(split, "F=1,I=1,W=1"));
  EXPECT_NE(svg.find(">I backward (input)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">W backward (weight)</text>"), std::string::npos);
  EXPECT_NE(svg.find("#E69F00"), std::string::npos);  // I orange
  EXPECT_NE(svg.find("#CC79A7"), std::string::npos);  // W reddish purple

  const Schedule v = testing_viz::VShapeGPipe(2, 2);
  const std::string vsvg = RenderTimelineSvg(v, SimulateOrDie(v));
  EXPECT_NE(vsvg.find("lighter: rank's 2nd chunk"), std::string::npos);
  EXPECT_EQ(Count(vsvg, kActionBox), v.NumActions());
}

TEST(SvgTimelineTest, HugeSchedulesDrawAtPixelResolutionQuickly) {
  const Schedule s = OneFOneB(8, 4000);  // 64 000 actions
  const SimResult sim = SimulateOrDie(s);
  const auto start = std::chrono::steady_clock::now();
  const std::string svg = RenderTimelineSvg(s, sim);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
  EXPECT_EQ(svg.find("<title>"), std::string::npos);  // no tooltips
  EXPECT_EQ(svg.find("class=\"lbl"), std::string::npos);  // no labels
  EXPECT_NE(svg.find("drawn at pixel resolution"), std::string::npos);
  EXPECT_LT(svg.size(), 2'000'000u);
  EXPECT_EQ(Count(svg, "class=\"lane"), 8u);
}

}  // namespace
}  // namespace pw
