#include "viz/line_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace pw {
namespace {

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A tick step of 1, 2 or 5 x 10^k giving about `target` ticks over `span`.
double NiceStep(double span, int target) {
  if (!(span > 0)) return 1;
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 5.0, 10.0}) {
    if (f * mag >= raw) return f * mag;
  }
  return 10 * mag;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string RenderLineChartSvg(const std::string& title, const std::string& x_label,
                               const std::vector<ChartSeries>& series) {
  constexpr double kW = 720, kH = 360, kLeft = 60, kRight = 20, kTop = 40, kBottom = 50;
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const ChartSeries& s : series) {
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, s.y[i]);
      y1 = std::max(y1, s.y[i]);
    }
  }
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(kW) + "\" height=\"" + Num(kH) +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
                    "fill=\"white\"/>\n<text x=\"" + Num(kLeft) + "\" y=\"24\" font-size=\"15\" font-weight=\"bold\">" +
                    Escape(title) + "</text>\n";
  if (!(x1 >= x0)) return out + "<text x=\"60\" y=\"180\">no data points</text>\n</svg>\n";
  if (x1 == x0) x1 = x0 + 1;
  const double pad = (y1 - y0) * 0.05 + (y1 == y0 ? 0.5 : 0);
  y0 -= pad;
  y1 += pad;
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return kTop + (y1 - y) / (y1 - y0) * ph; };
  out += "<rect x=\"" + Num(kLeft) + "\" y=\"" + Num(kTop) + "\" width=\"" + Num(pw) + "\" height=\"" + Num(ph) +
         "\" fill=\"none\" stroke=\"#999\"/>\n";
  const double xs = NiceStep(x1 - x0, 8), ys = NiceStep(y1 - y0, 6);
  for (double x = std::ceil(x0 / xs) * xs; x <= x1 + 1e-9; x += xs) {
    out += "<line x1=\"" + Num(px(x)) + "\" y1=\"" + Num(kTop + ph) + "\" x2=\"" + Num(px(x)) + "\" y2=\"" +
           Num(kTop + ph + 4) + "\" stroke=\"#999\"/><text x=\"" + Num(px(x)) + "\" y=\"" + Num(kTop + ph + 18) +
           "\" text-anchor=\"middle\">" + Num(x) + "</text>\n";
  }
  for (double y = std::ceil(y0 / ys) * ys; y <= y1 + 1e-9; y += ys) {
    out += "<line x1=\"" + Num(kLeft) + "\" y1=\"" + Num(py(y)) + "\" x2=\"" + Num(kLeft + pw) + "\" y2=\"" +
           Num(py(y)) + "\" stroke=\"#eee\"/><text x=\"" + Num(kLeft - 6) + "\" y=\"" + Num(py(y) + 4) +
           "\" text-anchor=\"end\">" + Num(y) + "</text>\n";
  }
  out += "<text x=\"" + Num(kLeft + pw / 2) + "\" y=\"" + Num(kH - 10) + "\" text-anchor=\"middle\">" +
         Escape(x_label) + "</text>\n";
  double legend_x = kLeft + 10;
  for (const ChartSeries& s : series) {
    std::string points;
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      points += Num(px(s.x[i])) + "," + Num(py(s.y[i])) + " ";
    }
    if (points.empty()) continue;
    out += "<polyline fill=\"none\" stroke=\"" + Escape(s.color) + "\" stroke-width=\"2\" points=\"" + points +
           "\"><title>" + Escape(s.name) + "</title></polyline>\n";
    out += "<rect x=\"" + Num(legend_x) + "\" y=\"" + Num(kTop + 8) + "\" width=\"14\" height=\"4\" fill=\"" +
           Escape(s.color) + "\"/><text x=\"" + Num(legend_x + 18) + "\" y=\"" + Num(kTop + 14) + "\">" +
           Escape(s.name) + "</text>\n";
    legend_x += 30 + 7 * static_cast<double>(s.name.size());
  }
  return out + "</svg>\n";
}

}  // namespace pw
