#include "schedule/step_grid.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace pw {

std::string ActionLabel(const Schedule& schedule, const Action& a) {
  if (schedule.kinds.Contains(a.kind)) return schedule.ActionName(a);
  std::string s = std::to_string(a.stage) + "?" + std::to_string(static_cast<int>(a.kind));
  if (a.microbatch != kNoMicrobatch) s += std::to_string(a.microbatch);
  return s;
}

namespace {

// "…" is three bytes but one column wide; widths below count columns.
constexpr const char* kEllipsis = "\xE2\x80\xA6";

// A half-open range [begin, end) of rows or columns to show.
struct Span {
  size_t begin = 0, end = 0;
  size_t size() const { return end - begin; }
};

// Chooses `limit` consecutive indices out of `total`: centred on [lo, hi]
// when given, else from the start. `limit` <= 0 means no limit.
Span Window(size_t total, int limit, std::optional<size_t> lo, std::optional<size_t> hi) {
  const size_t n = (limit <= 0 || total <= static_cast<size_t>(limit)) ? total : static_cast<size_t>(limit);
  if (!lo || n == total) return {0, n};
  const size_t span = *hi - *lo + 1;  // callers keep span <= n
  const size_t slack = n - span;
  size_t begin = *lo > slack / 2 ? *lo - slack / 2 : 0;
  begin = std::min(begin, total - n);
  return {begin, begin + n};
}

// The interval [lo, hi] that covers `primary` and as many of `others` (in
// order) as fit within `limit` together; nullopt when nothing is marked.
struct Interval {
  std::optional<size_t> lo, hi;
};
Interval Cover(std::optional<size_t> primary, const std::vector<size_t>& others, int limit) {
  Interval iv;
  auto fits = [&](size_t lo, size_t hi) { return limit <= 0 || hi - lo + 1 <= static_cast<size_t>(limit); };
  for (size_t i = 0; i <= others.size(); ++i) {
    std::optional<size_t> v = i == 0 ? primary : std::optional<size_t>(others[i - 1]);
    if (!v) continue;
    if (!iv.lo) {
      iv.lo = iv.hi = v;
    } else if (fits(std::min(*iv.lo, *v), std::max(*iv.hi, *v))) {
      iv.lo = std::min(*iv.lo, *v);
      iv.hi = std::max(*iv.hi, *v);
    }
  }
  return iv;
}

void TrimRight(std::string& line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
}

std::string PadLeft(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

// Compact mode: one character per kind, and a legend for the ones shown.
class CompactAlphabet {
 public:
  explicit CompactAlphabet(const KindRegistry& kinds) {
    chars_.fill('?');
    const char builtin[] = {'F', 'B', 'I', 'W', 's', 'r', 's', 'r', 'R', 'O', '.'};
    static_assert(sizeof(builtin) == kNumBuiltinKinds);
    for (int k = 0; k < kNumBuiltinKinds; ++k) chars_[k] = builtin[k];
    // User kinds take the lower-case first letter of their name, unless a
    // letter is already taken (s, r, or an earlier user kind): then a digit.
    std::string taken = "sr";
    int digit = 0;
    for (ActionKind k : kinds.UserKinds()) {
      char c = static_cast<char>(kinds.Name(k)[0] - 'A' + 'a');
      if (c < 'a' || c > 'z' || taken.find(c) != std::string::npos) c = static_cast<char>('0' + digit++ % 10);
      taken += c;
      chars_[static_cast<int>(k)] = c;
      user_names_.push_back(std::string(1, c) + " " + std::string(kinds.Name(k)));
      user_chars_.push_back(c);
    }
  }
  char Of(ActionKind k) const { return chars_[static_cast<int>(k)]; }

  // "legend: F forward, ..." listing the characters in `used`.
  std::string Legend(const std::string& used) const {
    static const std::array<std::pair<char, const char*>, 9> kBuiltin = {{{'F', "forward"},
                                                                          {'B', "backward"},
                                                                          {'I', "input grad"},
                                                                          {'W', "weight grad"},
                                                                          {'s', "send"},
                                                                          {'r', "receive"},
                                                                          {'R', "reduce grad"},
                                                                          {'O', "optimizer"},
                                                                          {'.', "idle"}}};
    std::string out;
    auto add = [&](const std::string& item) { out += (out.empty() ? "legend: " : ", ") + item; };
    for (const auto& [c, what] : kBuiltin) {
      if (used.find(c) != std::string::npos) add(std::string(1, c) + " " + what);
    }
    for (size_t i = 0; i < user_chars_.size(); ++i) {
      if (used.find(user_chars_[i]) != std::string::npos) add(user_names_[i]);
    }
    if (used.find('?') != std::string::npos) add("? unregistered kind");
    return out;
  }

 private:
  std::array<char, kMaxKinds> chars_;
  std::vector<std::string> user_names_;
  std::string user_chars_;
};

enum class Emphasis : uint8_t { kNone, kMark, kRelated };

// What to draw: the window of ranks and steps, the marks, and the pieces of
// every line that both drawing modes share.
class Layout {
 public:
  Layout(const Schedule& schedule, const StepGridOptions& options) : schedule_(schedule) {
    const size_t num_rows = schedule.programs.size();
    auto on_grid = [&](const GridCell& c) { return c.rank >= 0 && static_cast<size_t>(c.rank) < num_rows; };
    if (options.mark && on_grid(*options.mark)) mark_ = options.mark;
    for (const GridCell& c : options.related) {
      if (on_grid(c) && !(mark_ && c == *mark_)) related_.push_back(c);
    }
    if (mark_) {
      focus_ = static_cast<size_t>(mark_->rank);
    } else if (options.focus_rank && *options.focus_rank >= 0 &&
               static_cast<size_t>(*options.focus_rank) < num_rows) {
      focus_ = static_cast<size_t>(*options.focus_rank);
    }
    // Marks past the end of a program still get a column, so they show.
    for (const Program& p : schedule.programs) total_steps_ = std::max(total_steps_, p.size());
    if (mark_) total_steps_ = std::max(total_steps_, mark_->step + 1);
    std::vector<size_t> related_rows, related_steps;
    for (const GridCell& c : related_) {
      total_steps_ = std::max(total_steps_, c.step + 1);
      related_rows.push_back(static_cast<size_t>(c.rank));
      related_steps.push_back(c.step);
    }
    const Interval row_iv = Cover(focus_, related_rows, options.max_rows);
    const Interval col_iv = Cover(mark_ ? std::optional<size_t>(mark_->step) : std::nullopt, related_steps,
                                  options.max_columns);
    rows_ = Window(num_rows, options.max_rows, row_iv.lo, row_iv.hi);
    cols_ = total_steps_ == 0 ? Span{} : Window(total_steps_, options.max_columns, col_iv.lo, col_iv.hi);
    rank_digits_ = std::to_string(rows_.end - 1).size();
  }

  const Schedule& schedule() const { return schedule_; }
  const Span& rows() const { return rows_; }
  const Span& cols() const { return cols_; }

  Emphasis At(size_t r, size_t step) const {
    if (mark_ && static_cast<size_t>(mark_->rank) == r && mark_->step == step) return Emphasis::kMark;
    for (const GridCell& c : related_) {
      if (static_cast<size_t>(c.rank) == r && c.step == step) return Emphasis::kRelated;
    }
    return Emphasis::kNone;
  }

  // "> rank  3 | …": the focused row gets '>', rank numbers are
  // right-aligned so the bars line up, and "…" stands for elided steps.
  std::string RowStart(size_t r) const {
    return std::string(focus_ && *focus_ == r ? "> " : "  ") + "rank " + PadLeft(std::to_string(r), rank_digits_) +
           " |" + (cols_.begin > 0 ? std::string(" ") + kEllipsis : "");
  }
  std::string RowEnd() const { return cols_.end < total_steps_ ? std::string(" ") + kEllipsis : ""; }
  // The same widths without a label: for the header and caret lines.
  std::string HeaderStart() const {
    return "  step" + std::string(rank_digits_ + 1, ' ') + " |" + (cols_.begin > 0 ? "  " : "");
  }
  std::string BlankStart() const { return std::string(2 + 5 + rank_digits_ + 2, ' ') + (cols_.begin > 0 ? "  " : ""); }

  // Lines for the ranks above and below the window, and for the steps cut.
  std::string SkippedAbove() const { return rows_.begin > 0 ? Skipped(0, rows_.begin) : ""; }
  std::string SkippedBelow() const {
    return rows_.end < schedule_.programs.size() ? Skipped(rows_.end, schedule_.programs.size()) : "";
  }
  std::string StepsShown() const {
    if (cols_.begin == 0 && cols_.end == total_steps_) return "";
    return "  (steps " + std::to_string(cols_.begin) + ".." + std::to_string(cols_.end - 1) + " of " +
           std::to_string(total_steps_) + " shown)\n";
  }

 private:
  static std::string Skipped(size_t from, size_t to) {  // [from, to)
    return (to - from == 1 ? "  (rank " + std::to_string(from)
                           : "  (ranks " + std::to_string(from) + ".." + std::to_string(to - 1)) +
           " not shown)\n";
  }

  const Schedule& schedule_;
  std::optional<GridCell> mark_;
  std::vector<GridCell> related_;
  std::optional<size_t> focus_;
  size_t total_steps_ = 0;
  Span rows_, cols_;
  size_t rank_digits_ = 1;
};

std::string Line(std::string s) {
  TrimRight(s);
  return s + "\n";
}

// One character per cell; marks go on a caret line beneath the row.
std::string RenderCompact(const Layout& g) {
  const Span& rows = g.rows();
  const Span& cols = g.cols();
  const CompactAlphabet alphabet(g.schedule().kinds);
  // Ruler: the step number at the first column and at every multiple of 10
  // that has room.
  std::string ruler(cols.size(), ' ');
  for (size_t j = 0; j < cols.size(); ++j) {
    const size_t step = cols.begin + j;
    if (step % 10 != 0 && j != 0) continue;
    const std::string num = std::to_string(step);
    if (j + num.size() > ruler.size() || (j > 0 && ruler[j - 1] != ' ')) continue;
    ruler.replace(j, num.size(), num);
  }
  std::string out = Line(g.HeaderStart() + " " + ruler) + g.SkippedAbove();
  std::string used;  // characters drawn, for the legend
  for (size_t r = rows.begin; r < rows.end; ++r) {
    const Program& prog = g.schedule().programs[r];
    std::string cells(cols.size(), ' ');
    std::string carets(cols.size(), ' ');
    for (size_t j = 0; j < cols.size(); ++j) {
      const size_t step = cols.begin + j;
      if (step < prog.size()) {
        cells[j] = alphabet.Of(prog[step].kind);
        if (used.find(cells[j]) == std::string::npos) used += cells[j];
      }
      const Emphasis e = g.At(r, step);
      if (e != Emphasis::kNone) carets[j] = e == Emphasis::kMark ? '^' : '+';
    }
    out += Line(g.RowStart(r) + " " + cells + g.RowEnd());
    if (carets.find_first_not_of(' ') != std::string::npos) out += Line(g.BlankStart() + " " + carets);
  }
  return out + g.SkippedBelow() + "  " + alphabet.Legend(used) + "\n";
}

// Action names in columns as wide as the widest name (or step number).
std::string RenderNames(const Layout& g) {
  const Span& rows = g.rows();
  const Span& cols = g.cols();
  std::vector<std::string> text(rows.size() * cols.size());
  size_t width = 1;
  for (size_t j = 0; j < cols.size(); ++j) width = std::max(width, std::to_string(cols.begin + j).size());
  for (size_t r = rows.begin; r < rows.end; ++r) {
    const Program& prog = g.schedule().programs[r];
    for (size_t j = 0; j < cols.size() && cols.begin + j < prog.size(); ++j) {
      const Action& a = prog[cols.begin + j];
      std::string& t = text[(r - rows.begin) * cols.size() + j];
      t = a.kind == ActionKind::kIdle ? "." : ActionLabel(g.schedule(), a);
      width = std::max(width, t.size());
    }
  }
  // Every cell is width + 2 columns: the text right-aligned, framed by
  // spaces, or by >...< / [...] when emphasised, so marks never shift a column.
  auto cell = [&](const std::string& t, Emphasis e) {
    const char open = e == Emphasis::kMark ? '>' : e == Emphasis::kRelated ? '[' : ' ';
    const char close = e == Emphasis::kMark ? '<' : e == Emphasis::kRelated ? ']' : ' ';
    if (t.empty() && e != Emphasis::kNone) return open + std::string(width, ' ') + close;
    return std::string(width - std::min(width, t.size()), ' ') + open + t + close;
  };
  std::string header = g.HeaderStart();
  for (size_t j = 0; j < cols.size(); ++j) header += cell(std::to_string(cols.begin + j), Emphasis::kNone);
  std::string out = Line(header) + g.SkippedAbove();
  for (size_t r = rows.begin; r < rows.end; ++r) {
    std::string line = g.RowStart(r);
    for (size_t j = 0; j < cols.size(); ++j) {
      line += cell(text[(r - rows.begin) * cols.size() + j], g.At(r, cols.begin + j));
    }
    out += Line(line + g.RowEnd());
  }
  return out + g.SkippedBelow();
}

}  // namespace

std::string RenderStepGrid(const Schedule& schedule, const StepGridOptions& options) {
  if (schedule.programs.empty()) return "(the schedule has no programs)\n";
  const Layout layout(schedule, options);
  return (options.compact ? RenderCompact(layout) : RenderNames(layout)) + layout.StepsShown();
}

}  // namespace pw
