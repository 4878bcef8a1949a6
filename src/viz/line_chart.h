// RenderLineChartSvg: a small standalone SVG line chart (training loss and
// validation loss against step) that a person can open in a browser.
#pragma once

#include <string>
#include <vector>

namespace pw {

struct ChartSeries {
  std::string name;         // legend text, e.g. "train loss"
  std::string color;        // CSS colour, e.g. "#0072B2"
  std::vector<double> x, y; // same length; points drawn in order
};

// Axes fitted to the data (y from its min to its max, padded), ticks with
// round numbers, one polyline per series, a legend. Empty series are
// skipped; with no points at all the chart says so. Pure.
std::string RenderLineChartSvg(const std::string& title, const std::string& x_label,
                               const std::vector<ChartSeries>& series);

}  // namespace pw
