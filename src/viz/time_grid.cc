#include "viz/time_grid.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "viz/style.h"

namespace pw {
namespace {

using viz_internal::FormatNumber;

constexpr int32_t kIdleCell = -1;

// The largest q = d / k (d the shortest action, k = 1..16) such that every
// action's start and end is a whole multiple of q; 0 if there is none or it
// would need more than `max_columns` columns.
double AutoQuantum(const SimResult& result, double max_columns) {
  double shortest = 0;
  for (const auto& rank : result.spans) {
    for (const ActionSpan& s : rank) {
      const double d = s.end - s.start;
      if (d > 0 && (shortest == 0 || d < shortest)) shortest = d;
    }
  }
  if (shortest == 0) return 0;
  auto whole = [](double x, double q) {
    const double n = x / q;
    return std::fabs(n - std::round(n)) < 1e-6;
  };
  for (int k = 1; k <= 16; ++k) {
    const double q = shortest / k;
    if (result.makespan / q > max_columns) break;
    bool ok = true;
    for (size_t r = 0; ok && r < result.spans.size(); ++r) {
      for (const ActionSpan& s : result.spans[r]) {
        if (s.end > s.start && !(whole(s.start, q) && whole(s.end, q))) {
          ok = false;
          break;
        }
      }
    }
    if (ok) return q;
  }
  return 0;
}

// Text of one action in a cell: kind letter (lower case on a rank's odd
// chunks) and microbatch.
std::string CellLabel(const Action& a, char letter, int chunk) {
  std::string s(1, chunk % 2 == 1 ? static_cast<char>(std::tolower(letter)) : letter);
  if (a.microbatch != kNoMicrobatch) s += std::to_string(a.microbatch);
  return s;
}

// owner[c] = program index of the action whose span holds the middle of
// column c, or kIdleCell.
void AssignColumns(const std::vector<ActionSpan>& spans, double quantum, int columns,
                   std::vector<int32_t>& owner) {
  owner.assign(columns, kIdleCell);
  for (size_t i = 0; i < spans.size(); ++i) {
    const ActionSpan& s = spans[i];
    if (!(s.end > s.start)) continue;
    // Columns c with (c + 0.5) * quantum in [start, end).
    const double first = std::ceil(s.start / quantum - 0.5);
    const double last = std::ceil(s.end / quantum - 0.5) - 1;
    const int lo = static_cast<int>(std::max(0.0, first));
    const int hi = static_cast<int>(std::min<double>(columns - 1, last));
    for (int c = lo; c <= hi; ++c) owner[c] = static_cast<int32_t>(i);
  }
}

}  // namespace

std::string RenderTimeGrid(const Schedule& schedule, const SimResult& result, const TimeGridOptions& options) {
  viz_internal::CheckSpansMatch(schedule, result);
  PW_CHECK(options.max_columns >= 1, "TimeGridOptions::max_columns must be at least 1");
  const int p = schedule.num_ranks();
  const viz_internal::KindLetters letters(schedule.kinds);
  const std::vector<int> chunk_of_stage = viz_internal::ChunkOfStage(schedule.placement);
  const bool multi_chunk = viz_internal::MaxChunksPerRank(schedule.placement) > 1;

  // Cell width of the labelled layout: the longest label, at least 2.
  size_t label_width = 2;
  std::vector<bool> kind_shown(kMaxKinds, false);
  for (int r = 0; r < p; ++r) {
    for (size_t i = 0; i < schedule.programs[r].size(); ++i) {
      const Action& a = schedule.programs[r][i];
      if (!(result.spans[r][i].end > result.spans[r][i].start)) continue;
      kind_shown[static_cast<size_t>(a.kind)] = true;
      size_t len = 1 + (a.microbatch == kNoMicrobatch ? 0 : std::to_string(a.microbatch).size());
      label_width = std::max(label_width, len);
    }
  }

  // Layout: labelled cells if they fit, else one character per column,
  // else coarse columns of makespan / max_columns.
  const int max_columns = options.max_columns;
  const double makespan = result.makespan;
  double quantum = options.quantum > 0 ? options.quantum : AutoQuantum(result, max_columns);
  bool coarse = false;
  int columns = 0;
  if (makespan > 0) {
    if (quantum > 0 && makespan / quantum <= max_columns) {
      columns = static_cast<int>(std::ceil(makespan / quantum - 1e-9));
    } else {
      // A round quantum keeps the scale and the ruler readable.
      quantum = viz_internal::NiceStep(makespan / max_columns);
      columns = std::min(max_columns, static_cast<int>(std::ceil(makespan / quantum - 1e-9)));
      coarse = true;
    }
  }
  const bool labelled = columns > 0 && static_cast<size_t>(columns) * (label_width + 1) <= static_cast<size_t>(max_columns);
  const size_t cell = labelled ? label_width + 1 : 1;  // characters per column

  std::string out;
  if (options.title) {
    out += schedule.name.empty() ? std::string("schedule") : schedule.name;
    out += ": p=" + std::to_string(p) + ", m=" + std::to_string(schedule.num_microbatches);
    if (multi_chunk) out += ", stages=" + std::to_string(schedule.num_stages());
    out += ", makespan " + FormatNumber(makespan) + ", bubble ratio " + viz_internal::FormatPercent(result.bubble_ratio);
    if (columns > 0) {
      out += ", 1 column = " + FormatNumber(quantum) + (quantum == 1 ? " time unit" : " time units");
      if (coarse) out += " (coarse: actions shorter than a column may not show)";
    }
    out += '\n';
  }

  const std::string last_rank = "rank " + std::to_string(p - 1);
  const size_t prefix_width = last_rank.size();
  std::vector<int32_t> owner;
  for (int r = 0; r < p; ++r) {
    std::string name = "rank " + std::to_string(r);
    out += name;
    out.append(prefix_width - name.size(), ' ');
    out += labelled ? " | " : " |";
    AssignColumns(result.spans[r], quantum, columns, owner);
    for (int c = 0; c < columns;) {
      int end = c + 1;
      while (end < columns && owner[end] == owner[c]) ++end;
      const size_t run = static_cast<size_t>(end - c);
      if (owner[c] == kIdleCell) {
        for (size_t k = 0; k < run; ++k) {
          out.append(cell == 1 ? 1 : label_width, '.');
          if (cell > 1) out += ' ';
        }
      } else {
        const Action& a = schedule.programs[r][owner[c]];
        const char letter = letters.Of(a.kind);
        const int chunk = chunk_of_stage[a.stage];
        std::string text = labelled ? CellLabel(a, letter, chunk)
                                    : std::string(1, chunk % 2 == 1 ? static_cast<char>(std::tolower(letter)) : letter);
        const size_t width = run * cell - (labelled ? 1 : 0);
        if (text.size() < width) text.append(width - text.size(), run == 1 ? ' ' : '-');
        out += text;
        if (labelled) out += ' ';
      }
      c = end;
    }
    out += "|\n";
  }

  if (options.ruler && columns > 0) {
    // Labels at round times (step 1, 2, 5, 10, ... units), the smallest step
    // that leaves room for the widest label and some air.
    const double span = columns * quantum;
    const size_t widest = std::max(FormatNumber(0).size(), FormatNumber(span).size());
    const size_t min_gap = std::max<size_t>(widest + 1, 6);
    const double step = viz_internal::NiceStep(std::ceil(static_cast<double>(min_gap) / cell) * quantum);
    std::string ruler = "time";
    ruler.append(prefix_width + (labelled ? 3 : 2) - ruler.size(), ' ');
    const size_t origin = ruler.size();
    for (int k = 0; k * step <= span * (1 + 1e-9); ++k) {
      const size_t at = origin + static_cast<size_t>(std::lround(k * step / quantum)) * cell;
      if (ruler.size() > at) continue;  // no room; skip this tick
      ruler.append(at - ruler.size(), ' ');
      ruler += FormatNumber(k * step);
    }
    out += ruler + '\n';
  }

  if (options.legend) {
    // One entry per letter; kinds sharing a letter (SEND_F, SEND_B) share it.
    std::vector<std::pair<char, std::string>> entries;
    for (int k = 0; k < kMaxKinds; ++k) {
      if (!kind_shown[k]) continue;
      const ActionKind kind = static_cast<ActionKind>(k);
      const std::string what = viz_internal::KindDescription(schedule.kinds, kind);
      auto same = std::find_if(entries.begin(), entries.end(),
                               [&](const auto& e) { return e.first == letters.Of(kind); });
      if (same == entries.end()) entries.emplace_back(letters.Of(kind), what);
      else same->second += "/" + what;
    }
    std::string legend = "legend:";
    for (const auto& [letter, what] : entries) {
      legend += ' ';
      legend += letter;
      legend += '=' + what;
    }
    legend += " .=idle";
    if (labelled) legend += "; digits = microbatch";
    if (multi_chunk) legend += "; lower case = a rank's 2nd (4th, ...) chunk";
    out += legend + '\n';
  }
  return out;
}

}  // namespace pw
