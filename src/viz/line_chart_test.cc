#include "viz/line_chart.h"

#include <gtest/gtest.h>

namespace pw {
namespace {

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(LineChartTest, DrawsOnePolylinePerNonEmptySeriesWithAllPoints) {
  ChartSeries train{"train loss", "#0072B2", {0, 1, 2, 3}, {5.5, 4.0, 3.5, 3.0}};
  ChartSeries val{"val <loss>", "#D55E00", {1, 3}, {3.9, 3.1}};
  ChartSeries empty{"nothing", "#000", {}, {}};
  std::string svg = RenderLineChartSvg("tiny & fast", "step", {train, val, empty});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(Count(svg, "<polyline"), 2u);
  EXPECT_NE(svg.find("val &lt;loss&gt;"), std::string::npos);
  EXPECT_NE(svg.find("tiny &amp; fast"), std::string::npos);
  // Four points in the first polyline: the first at the left edge, the last at the right.
  const size_t poly = svg.find("points=\"");
  const std::string pts = svg.substr(poly + 8, svg.find('"', poly + 8) - poly - 8);
  EXPECT_EQ(Count(pts, ","), 4u);
  EXPECT_EQ(pts.rfind("60,", 0), 0u);
}

TEST(LineChartTest, NoDataSaysSo) {
  EXPECT_NE(RenderLineChartSvg("t", "step", {}).find("no data points"), std::string::npos);
}

}  // namespace
}  // namespace pw
