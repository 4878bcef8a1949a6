#include "viz/svg_timeline.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/units.h"
#include "viz/style.h"

namespace pw {
namespace {

using viz_internal::FormatNumber;
using viz_internal::FormatPercent;
using viz_internal::NiceStep;

constexpr const char* kFontFamily = "DejaVu Sans, Helvetica, Arial, sans-serif";
constexpr double kTitleHeight = 52;     // title and subtitle lines above the lanes
constexpr double kAxisHeight = 34;      // ticks and their labels under the lanes
constexpr double kLegendRowHeight = 22;
constexpr double kRightMargin = 84;     // "idle 33.3%" after each lane
constexpr double kCharWidth = 0.62;     // average glyph width / font size, for fitting text
constexpr double kMinLabelledLane = 12; // px; thinner lanes get no box labels

void AppendEscaped(std::string& out, std::string_view s) {
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;  // safe inside our double-quoted attributes
      default:
        // Control characters are not allowed in XML 1.0 text.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') out += ' ';
        else out += c;
    }
  }
}

// A coordinate with at most two decimals and no trailing zeros.
void AppendNum(std::string& out, double v) {
  char buf[48];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed, 2);
  PW_CHECK(ec == std::errc(), "coordinate does not fit");
  char* p = end;
  while (p > buf && p[-1] == '0') --p;
  if (p > buf && p[-1] == '.') --p;
  std::string_view text(buf, static_cast<size_t>(p - buf));
  out += text == "-0" || text.empty() ? std::string_view("0") : text;
}

// Appends ` name="value"` for a number.
void Attr(std::string& out, const char* name, double v) {
  out += ' ';
  out += name;
  out += "=\"";
  AppendNum(out, v);
  out += '"';
}

struct LegendEntry {
  std::string css_class;  // swatch style
  std::string text;
  bool thin = false;      // drawn as a thin mark, like communication
};

// Everything the drawing steps share: geometry and the style of each
// (kind, chunk) pair.
class SvgBuilder {
 public:
  SvgBuilder(const Schedule& schedule, const SimResult& result, const SvgOptions& options)
      : schedule_(schedule), result_(result), options_(options),
        chunk_of_stage_(viz_internal::ChunkOfStage(schedule.placement)),
        chunks_(std::max(1, viz_internal::MaxChunksPerRank(schedule.placement))),
        detailed_(schedule.NumActions() <= options.detail_limit),
        letters_(schedule.kinds),
        style_used_(static_cast<size_t>(kMaxKinds) * chunks_, false) {
    for (size_t r = 0; r < schedule.programs.size(); ++r) {
      for (size_t i = 0; i < schedule.programs[r].size(); ++i) {
        const ActionSpan& s = result.spans[r][i];
        if (s.end > s.start) style_used_[StyleIndex(schedule.programs[r][i])] = true;
      }
    }
    ComputeLayout();
  }

  std::string Build() {
    out_.reserve(4096 + schedule_.NumActions() * (detailed_ ? 160 : 0));
    Header();
    Title();
    Lanes();
    Axis();
    Legend();
    out_ += "</svg>\n";
    return std::move(out_);
  }

 private:
  size_t StyleIndex(const Action& a) const {
    return static_cast<size_t>(a.kind) * chunks_ + static_cast<size_t>(chunk_of_stage_[a.stage]);
  }
  // Lighter for later chunks, so that a rank's chunks stand apart; adjacent
  // chunks differ most when there are two (v-shape, interleaved v=2).
  std::string StyleFill(size_t style) const {
    const ActionKind kind = static_cast<ActionKind>(style / chunks_);
    const size_t chunk = style % chunks_;
    const std::string base = viz_internal::KindFill(schedule_.kinds, kind);
    return chunk == 0 ? base : viz_internal::Lighten(base, 0.55 * chunk / (chunks_ - 1));
  }
  static std::string StyleClass(size_t style) { return "s" + std::to_string(style); }

  double X(double t) const { return left_ + t * scale_; }
  double LaneY(int r) const { return top_ + r * lane_height_; }

  void ComputeLayout() {
    const int p = schedule_.num_ranks();
    lane_height_ = options_.lane_height;
    if (p * lane_height_ > options_.max_lanes_height) {
      lane_height_ = std::max(4.0, std::floor(static_cast<double>(options_.max_lanes_height) / p));
    }
    // Whole pixels, so that pixel-resolution boxes do not blur at their edges.
    left_ = std::round(20 + 7.5 * std::string("rank " + std::to_string(p - 1)).size());
    const double fixed = left_ + kRightMargin;
    const double wanted = result_.makespan * options_.px_per_time_unit;
    plot_width_ = std::clamp(wanted, std::max(1.0, options_.min_width - fixed), std::max(1.0, options_.max_width - fixed));
    width_ = std::ceil(left_ + plot_width_ + kRightMargin);
    scale_ = result_.makespan > 0 ? plot_width_ / result_.makespan : 0;
    tick_step_ = NiceStep(result_.makespan * 90 / plot_width_);  // ticks >= 90 px apart
    top_ = kTitleHeight;
    lanes_bottom_ = top_ + p * lane_height_;

    // Legend entries, wrapped into rows across the picture.
    const KindRegistry& kinds = schedule_.kinds;
    bool comm = false;
    for (int k = 0; k < kMaxKinds; ++k) {
      if (!AnyChunkUsed(k)) continue;
      const ActionKind kind = static_cast<ActionKind>(k);
      if (IsCommunication(kind)) {
        comm = true;
        continue;
      }
      std::string text = std::string(1, letters_.Of(kind)) + " " + viz_internal::KindDescription(kinds, kind);
      if (IsUserKind(kind)) text = std::string(kinds.Name(kind));
      legend_.push_back({StyleClass(static_cast<size_t>(k) * chunks_), text, false});
    }
    if (comm) legend_.push_back({"comm", "communication", true});
    if (chunks_ > 1) legend_.push_back({"chunk2", chunks_ == 2 ? "lighter: rank's 2nd chunk" : "lighter: later chunks", false});
    if (options_.bubbles) legend_.push_back({"bubble", "bubble (idle)", false});
    double x = left_;
    int rows = 1;
    for (const LegendEntry& e : legend_) {
      const double w = EntryWidth(e);
      if (x > left_ && x + w > width_ - 10) {
        x = left_;
        ++rows;
      }
      x += w;
    }
    legend_top_ = lanes_bottom_ + kAxisHeight + 8;
    height_ = std::ceil(legend_top_ + rows * kLegendRowHeight + 8);
  }

  bool AnyChunkUsed(int kind) const {
    for (size_t c = 0; c < chunks_; ++c) {
      if (style_used_[static_cast<size_t>(kind) * chunks_ + c]) return true;
    }
    return false;
  }
  static double EntryWidth(const LegendEntry& e) { return 14 + 6 + e.text.size() * 12 * kCharWidth + 20; }

  void Header() {
    out_ += "<svg xmlns=\"http://www.w3.org/2000/svg\"";
    Attr(out_, "width", width_);
    Attr(out_, "height", height_);
    out_ += " viewBox=\"0 0 ";
    AppendNum(out_, width_);
    out_ += ' ';
    AppendNum(out_, height_);
    out_ += "\" font-family=\"";
    out_ += kFontFamily;
    out_ += "\" font-size=\"12\">\n";
    // Hatching for bubbles: light red with darker diagonal stripes, visible
    // without colour too.
    out_ +=
        "<defs><pattern id=\"pw-bubble\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
        "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#FCE4E0\"/>"
        "<rect width=\"2\" height=\"6\" fill=\"#EE9A8C\"/></pattern></defs>\n";
    out_ += "<style>\n";
    for (size_t s = 0; s < style_used_.size(); ++s) {
      // Chunk 0 of every kind present is defined too: the legend uses it.
      if (!style_used_[s] && !(s % chunks_ == 0 && AnyChunkUsed(static_cast<int>(s / chunks_)))) continue;
      const std::string fill = StyleFill(s);
      out_ += "." + StyleClass(s) + "{fill:" + fill + "}";
      out_ += ".t" + StyleClass(s) + "{fill:" + (viz_internal::PrefersDarkText(fill) ? "#1A1A1A" : "#FFFFFF") + "}\n";
    }
    out_ += ".comm{fill:#8A8A8A}.bubble{fill:url(#pw-bubble)}";
    out_ += ".chunk2{fill:" + viz_internal::Lighten(viz_internal::KindFill(schedule_.kinds, ActionKind::kForward), 0.55) + "}";
    out_ += ".lane{fill:#FFFFFF}.lane2{fill:#F4F5F7}.grid{stroke:#D5D8DC;stroke-width:1}";
    out_ += ".lbl{text-anchor:middle;font-size:" + FormatNumber(LabelFontSize()) + "px}";
    out_ += ".rk{text-anchor:end;fill:#222}.idle{fill:#666;font-size:11px}.tick{text-anchor:middle;fill:#444;font-size:11px}\n";
    out_ += "</style>\n";
    out_ += "<rect width=\"100%\" height=\"100%\" fill=\"#FFFFFF\"/>\n";
  }

  double LabelFontSize() const { return std::clamp(lane_height_ * 0.45, 8.0, 12.0); }

  void Title() {
    const std::string& name = options_.title.empty() ? schedule_.name : options_.title;
    std::string line = name.empty() ? std::string("schedule") : name;
    line += " \u2014 p=" + std::to_string(schedule_.num_ranks()) + ", m=" + std::to_string(schedule_.num_microbatches) +
            ", makespan " + FormatNumber(result_.makespan) + ", bubble ratio " + FormatPercent(result_.bubble_ratio);
    out_ += "<text x=\"";
    AppendNum(out_, left_);
    out_ += "\" y=\"22\" font-size=\"16\" font-weight=\"bold\" fill=\"#111\">";
    AppendEscaped(out_, line);
    if (result_.memory_cap_violated) {
      // The first few ranks only, so the title stays one line with 1000 ranks.
      std::string ranks;
      size_t listed = 0, over = 0;
      for (size_t r = 0; r < result_.ranks.size(); ++r) {
        if (!result_.ranks[r].memory_cap_violated) continue;
        if (++over <= 6) ranks += (listed++ ? ", " : "") + std::to_string(r);
      }
      if (over > listed) ranks += " and " + std::to_string(over - listed) + " more";
      // The space stays outside the tspan: renderers trim a tspan's leading blank.
      out_ += " <tspan fill=\"#C0392B\">\u2014 memory cap exceeded on rank " + ranks + "</tspan>";
    }
    out_ += "</text>\n";
    std::string sub = schedule_.placement.Describe() + " placement, " + std::to_string(schedule_.num_stages()) +
                      " stages, " + std::to_string(schedule_.NumActions()) + " actions; time in cost-model units";
    if (!detailed_) sub += "; drawn at pixel resolution, labels omitted";
    out_ += "<text x=\"";
    AppendNum(out_, left_);
    out_ += "\" y=\"40\" fill=\"#555\">";
    AppendEscaped(out_, sub);
    out_ += "</text>\n";
  }

  void Lanes() {
    const int p = schedule_.num_ranks();
    // Rank labels stay at least 12 px apart.
    const int label_every = static_cast<int>(std::ceil(12.0 / lane_height_));
    for (int r = 0; r < p; ++r) {
      const double y = LaneY(r);
      out_ += "<rect class=\"";
      out_ += r % 2 ? "lane2" : "lane";
      out_ += '"';
      Attr(out_, "x", left_);
      Attr(out_, "y", y);
      Attr(out_, "width", plot_width_);
      Attr(out_, "height", lane_height_);
      out_ += "/>\n";
      if (r % label_every == 0) {
        out_ += "<text class=\"rk\"";
        Attr(out_, "x", left_ - 8);
        Attr(out_, "y", y + lane_height_ / 2 + 4);
        out_ += ">rank " + std::to_string(r) + "</text>\n";
        if (result_.makespan > 0) {
          out_ += "<text class=\"idle\"";
          Attr(out_, "x", left_ + plot_width_ + 8);
          Attr(out_, "y", y + lane_height_ / 2 + 4);
          out_ += ">idle " + FormatPercent(1 - result_.ranks[r].busy / result_.makespan) + "</text>\n";
        }
      }
    }
    GridLines();
    for (int r = 0; r < p; ++r) {
      if (detailed_) {
        if (options_.bubbles) Bubbles(r);
        DetailedLane(r);
      } else {
        BinnedLane(r);
      }
    }
  }

  void GridLines() {
    for (double t : Ticks()) {
      out_ += "<line class=\"grid\"";
      Attr(out_, "x1", X(t));
      Attr(out_, "x2", X(t));
      Attr(out_, "y1", top_);
      Attr(out_, "y2", lanes_bottom_ + 4);
      out_ += "/>\n";
    }
  }

  // Round times 0, step, 2 step, ... up to the makespan.
  std::vector<double> Ticks() const {
    std::vector<double> ticks;
    if (!(result_.makespan > 0)) return ticks;
    for (int i = 0; i * tick_step_ <= result_.makespan * (1 + 1e-9); ++i) ticks.push_back(i * tick_step_);
    return ticks;
  }

  void Bubbles(int r) {
    for (const Bubble& b : result_.ranks[r].bubbles) {
      out_ += "<rect class=\"bubble\"";
      Attr(out_, "x", X(b.start));
      Attr(out_, "y", LaneY(r) + 1);
      Attr(out_, "width", (b.end - b.start) * scale_);
      Attr(out_, "height", lane_height_ - 2);
      if (options_.tooltips) {
        out_ += "><title>rank " + std::to_string(r) + " bubble " + FormatNumber(b.start) + ".." + FormatNumber(b.end) +
                " (" + FormatNumber(b.length()) + "), memory used " + FormatBytes(b.memory_used);
        if (b.free_memory) out_ += ", free " + FormatBytes(*b.free_memory);
        out_ += "</title></rect>\n";
      } else {
        out_ += "/>\n";
      }
    }
  }

  void DetailedLane(int r) {
    const Program& program = schedule_.programs[r];
    const double pad = lane_height_ >= 12 ? 3 : 1;
    const double font = LabelFontSize();
    const bool labels = options_.labels && lane_height_ >= kMinLabelledLane;
    for (size_t i = 0; i < program.size(); ++i) {
      const ActionSpan& span = result_.spans[r][i];
      if (!(span.end > span.start)) continue;  // zero-length (e.g. async comm): nothing to see
      const Action& a = program[i];
      const size_t style = StyleIndex(a);
      const double x = X(span.start);
      const double w = (span.end - span.start) * scale_;
      // A 1 px gap keeps back-to-back boxes apart where there is room.
      const double gap = w >= 4 ? 1 : 0;
      const bool comm = IsCommunication(a.kind);
      const double h = comm ? std::max(2.0, lane_height_ * 0.2) : lane_height_ - 2 * pad;
      const double y = comm ? LaneY(r) + lane_height_ - pad - h : LaneY(r) + pad;
      out_ += "<rect class=\"";
      out_ += comm ? std::string("comm") : StyleClass(style);
      out_ += '"';
      Attr(out_, "x", x + gap / 2);
      Attr(out_, "y", y);
      Attr(out_, "width", w - gap);
      Attr(out_, "height", h);
      if (options_.tooltips) {
        out_ += "><title>rank " + std::to_string(r) + " ";
        AppendEscaped(out_, schedule_.ActionName(a));
        out_ += " " + FormatNumber(span.start) + ".." + FormatNumber(span.end) + "</title></rect>\n";
      } else {
        out_ += "/>\n";
      }
      if (!labels || comm) continue;
      // Stage-wide kinds (REDUCE_GRAD, OPT) show their name, or its letter.
      std::string text = a.microbatch == kNoMicrobatch ? std::string(schedule_.kinds.Name(a.kind))
                                                       : std::to_string(a.microbatch);
      auto fits = [&](const std::string& t) { return t.size() * font * kCharWidth + 4 <= w; };
      if (!fits(text) && a.microbatch == kNoMicrobatch) text = std::string(1, letters_.Of(a.kind));
      if (!fits(text)) continue;  // too narrow to read
      out_ += "<text class=\"lbl t" + StyleClass(style) + "\"";
      Attr(out_, "x", x + w / 2);
      Attr(out_, "y", LaneY(r) + lane_height_ / 2 + font * 0.36);
      out_ += '>';
      AppendEscaped(out_, text);
      out_ += "</text>\n";
    }
  }

  // Pixel-resolution lane for huge schedules: each pixel column takes the
  // style covering most of it, or is a bubble when actions cover under half
  // of it; runs of equal pixels become one box. Bounded by the plot width
  // whatever the number of actions.
  void BinnedLane(int r) {
    const size_t pixels = static_cast<size_t>(std::ceil(plot_width_));
    if (dense_of_style_.empty()) {
      dense_of_style_.assign(style_used_.size(), -1);
      for (size_t s = 0; s < style_used_.size(); ++s) {
        if (style_used_[s]) {
          dense_of_style_[s] = static_cast<int>(style_of_dense_.size());
          style_of_dense_.push_back(s);
        }
      }
    }
    const size_t n = std::max<size_t>(1, style_of_dense_.size());
    if (pixels == 0 || !(result_.makespan > 0)) return;
    cover_.assign(pixels * n, 0.0f);
    const Program& program = schedule_.programs[r];
    for (size_t i = 0; i < program.size(); ++i) {
      const ActionSpan& span = result_.spans[r][i];
      if (!(span.end > span.start)) continue;
      const size_t d = static_cast<size_t>(dense_of_style_[StyleIndex(program[i])]);
      const double a = span.start * scale_, b = std::min(span.end * scale_, static_cast<double>(pixels));
      for (size_t k = static_cast<size_t>(a); k < pixels && k < b; ++k) {
        cover_[k * n + d] += static_cast<float>(std::min(b, k + 1.0) - std::max(a, static_cast<double>(k)));
      }
    }
    auto winner = [&](size_t k) {
      float total = 0, best = 0;
      int arg = -1;
      for (size_t d = 0; d < n; ++d) {
        const float c = cover_[k * n + d];
        total += c;
        if (c > best) best = c, arg = static_cast<int>(d);
      }
      return total >= 0.5f ? arg : -1;
    };
    const double pad = lane_height_ >= 12 ? 3 : 0;
    const double y = LaneY(r);
    for (size_t k = 0; k < pixels;) {
      const int w = winner(k);
      size_t end = k + 1;
      while (end < pixels && winner(end) == w) ++end;
      if (w >= 0 || options_.bubbles) {
        out_ += "<rect class=\"" + (w >= 0 ? StyleClass(style_of_dense_[w]) : std::string("bubble")) + "\"";
        Attr(out_, "x", left_ + k);
        Attr(out_, "y", w >= 0 ? y + pad : y + 1);
        Attr(out_, "width", static_cast<double>(end - k));
        Attr(out_, "height", std::max(1.0, w >= 0 ? lane_height_ - 2 * pad : lane_height_ - 2));
        out_ += "/>\n";
      }
      k = end;
    }
  }

  void Axis() {
    out_ += "<line stroke=\"#444\"";
    Attr(out_, "x1", left_);
    Attr(out_, "x2", left_ + plot_width_);
    Attr(out_, "y1", lanes_bottom_);
    Attr(out_, "y2", lanes_bottom_);
    out_ += "/>\n";
    for (double t : Ticks()) {
      out_ += "<line stroke=\"#444\"";
      Attr(out_, "x1", X(t));
      Attr(out_, "x2", X(t));
      Attr(out_, "y1", lanes_bottom_);
      Attr(out_, "y2", lanes_bottom_ + 5);
      out_ += "/><text class=\"tick\"";
      Attr(out_, "x", X(t));
      Attr(out_, "y", lanes_bottom_ + 18);
      out_ += ">" + FormatNumber(t) + "</text>\n";
    }
    out_ += "<text class=\"tick\"";
    Attr(out_, "x", left_ - 8);
    Attr(out_, "y", lanes_bottom_ + 18);
    out_ += " style=\"text-anchor:end\">time</text>\n";
  }

  void Legend() {
    double x = left_, y = legend_top_;
    for (const LegendEntry& e : legend_) {
      const double w = EntryWidth(e);
      if (x > left_ && x + w > width_ - 10) {
        x = left_;
        y += kLegendRowHeight;
      }
      out_ += "<rect class=\"key " + e.css_class + "\"";
      Attr(out_, "x", x);
      Attr(out_, "y", e.thin ? y + 9 : y);
      Attr(out_, "width", 14);
      Attr(out_, "height", e.thin ? 4 : 14);
      out_ += " stroke=\"#999\" stroke-width=\"0.5\"/><text";
      Attr(out_, "x", x + 20);
      Attr(out_, "y", y + 11.5);
      out_ += " fill=\"#222\">";
      AppendEscaped(out_, e.text);
      out_ += "</text>\n";
      x += w;
    }
  }

  const Schedule& schedule_;
  const SimResult& result_;
  const SvgOptions& options_;
  std::vector<int> chunk_of_stage_;
  size_t chunks_;
  bool detailed_;
  viz_internal::KindLetters letters_;
  std::vector<bool> style_used_;  // by StyleIndex
  std::vector<LegendEntry> legend_;
  double left_ = 0, top_ = 0, plot_width_ = 0, scale_ = 0, lane_height_ = 0, lanes_bottom_ = 0;
  double width_ = 0, height_ = 0, legend_top_ = 0, tick_step_ = 1;
  // Pixel-resolution lanes: dense style numbering and coverage per pixel.
  std::vector<int> dense_of_style_;
  std::vector<size_t> style_of_dense_;
  std::vector<float> cover_;
  std::string out_;
};

}  // namespace

std::string RenderTimelineSvg(const Schedule& schedule, const SimResult& result, const SvgOptions& options) {
  viz_internal::CheckSpansMatch(schedule, result);
  PW_CHECK(options.px_per_time_unit > 0 && options.max_width > 0 && options.min_width > 0 && options.lane_height > 0 &&
               options.max_lanes_height > 0,
           "SvgOptions sizes must be positive");
  return SvgBuilder(schedule, result, options).Build();
}

}  // namespace pw
