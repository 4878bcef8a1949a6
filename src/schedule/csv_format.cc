#include "schedule/csv_format.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/text.h"
#include "schedule/action_text.h"

namespace pw {
namespace {

// One cell as read, with where it starts for messages.
struct Cell {
  std::string text;
  int line = 1;
  int column = 1;
};
struct Row {
  int line = 1;  // where the row starts
  std::vector<Cell> cells;
};

// Splits CSV text into rows of cells as Python's csv.reader does with the
// default (excel) dialect: ',' separates cells, '"' quotes, "" inside
// quotes is one '"', and a line ends at "\r\n", "\n" or "\r". An empty line
// is an empty row. Only an unterminated quote is an error.
Result<std::vector<Row>> SplitCsv(std::string_view csv, std::string_view source) {
  std::vector<Row> rows;
  size_t i = 0;
  int line = 1;
  size_t line_start = 0;
  auto column = [&](size_t at) { return static_cast<int>(at - line_start) + 1; };
  auto end_line = [&](size_t& at) {  // `at` is on '\r' or '\n'; moves past the line break
    if (csv[at] == '\r' && at + 1 < csv.size() && csv[at + 1] == '\n') ++at;
    ++at;
    ++line;
    line_start = at;
  };
  while (i < csv.size()) {
    Row row;
    row.line = line;
    if (csv[i] == '\r' || csv[i] == '\n') {  // an empty line: a row with no cells
      end_line(i);
      rows.push_back(std::move(row));
      continue;
    }
    while (true) {
      Cell cell;
      cell.line = line;
      cell.column = column(i);
      bool in_quotes = false;
      while (i < csv.size()) {
        const char c = csv[i];
        if (in_quotes) {
          if (c == '"') {
            if (i + 1 < csv.size() && csv[i + 1] == '"') {
              cell.text += '"';
              i += 2;
            } else {
              in_quotes = false;
              ++i;
            }
          } else {
            if (c == '\n' || (c == '\r' && !(i + 1 < csv.size() && csv[i + 1] == '\n'))) {
              cell.text += c;
              end_line(i);
            } else {
              cell.text += c;
              ++i;
            }
          }
          continue;
        }
        if (c == ',' || c == '\r' || c == '\n') break;
        if (c == '"' && cell.text.empty()) {
          in_quotes = true;
        } else {
          cell.text += c;
        }
        ++i;
      }
      if (in_quotes) {
        return Status::InvalidArgument(std::string(source) + ":" + std::to_string(cell.line) + ":" +
                                       std::to_string(cell.column) +
                                       ": a quoted cell is not closed before the end of the file; add the closing '\"'");
      }
      row.cells.push_back(std::move(cell));
      if (i < csv.size() && csv[i] == ',') {
        ++i;
        continue;  // another cell follows, possibly empty at the end of the line
      }
      break;
    }
    if (i < csv.size()) end_line(i);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string_view Strip(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";  // what Python's str.strip() removes here
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

std::string FileStem(std::string_view path) {
  const size_t slash = path.find_last_of("/\\");
  if (slash != std::string_view::npos) path.remove_prefix(slash + 1);
  const size_t dot = path.rfind('.');
  if (dot != std::string_view::npos && dot > 0) path = path.substr(0, dot);
  return std::string(path);
}

// A hint for kinds that PyTorch has and pipewright's CSV does not.
std::string PyTorchOnlyHint(std::string_view cell) {
  if (cell.starts_with("(")) {
    return "this is PyTorch's OVERLAP_F_B group, which pipewright does not read; write its sub-actions as "
           "separate cells";
  }
  for (std::string_view k : {"UNSHARD", "RESHARD", "OVERLAP_F_B"}) {
    if (cell.find(k) != std::string_view::npos) {
      return std::string(k) + " is a PyTorch action that the compute-only CSV does not hold; remove it";
    }
  }
  return "";
}

struct Located {
  RankId rank;
  int line, column;
};

}  // namespace

Result<std::string> FormatScheduleCsv(const Schedule& schedule, const CsvExportOptions& options) {
  std::string out;
  for (size_t r = 0; r < schedule.programs.size(); ++r) {
    const Program& program = schedule.programs[r];
    for (size_t i = 0; i < program.size(); ++i) {
      const Action& a = program[i];
      if (a.kind != ActionKind::kIdle && !IsCompute(a.kind)) {
        const std::string what = schedule.kinds.Contains(a.kind)
                                     ? "'" + FormatAction(a, schedule.kinds) + "'"
                                     : "an action of unregistered kind id " + std::to_string(static_cast<int>(a.kind));
        return Status::FailedPrecondition(
            "rank " + std::to_string(r) + ", position " + std::to_string(i) + ": " + what +
            " is not a compute action, and PyTorch's compute-only CSV holds only F, B, I and W; strip the "
            "schedule to its compute actions first (StripToCompute), or save it in the text format, which "
            "keeps every action");
      }
    }
    // csv.writer writes a row of one empty cell as `""`, so that it differs
    // from a row with no cells (an empty line).
    if (program.size() == 1 && program[0].kind == ActionKind::kIdle) {
      out += "\"\"";
    } else {
      for (size_t i = 0; i < program.size(); ++i) {
        if (i > 0) out += ',';
        out += FormatAction(program[i], schedule.kinds);
      }
    }
    out += options.line_terminator;
  }
  return out;
}

Result<Schedule> ParseScheduleCsv(std::string_view csv, std::string_view source_name,
                                  const CsvImportOptions& options) {
  const std::string source(source_name);
  if (options.num_microbatches < 0) {
    return Status::InvalidArgument("number of microbatches must be positive (or 0 to infer it), got " +
                                   std::to_string(options.num_microbatches));
  }
  PW_ASSIGN_OR_RETURN(std::vector<Row> rows, SplitCsv(csv, source));
  if (rows.empty()) {
    return Status::InvalidArgument(source + ": the CSV has no rows; write one row per rank, e.g. '0F0,0B0'");
  }
  const KindRegistry kinds;  // the compute-only CSV holds built-in kinds only
  auto where = [&](const Cell& c, size_t rank, size_t index) {
    return source + ":" + std::to_string(c.line) + ":" + std::to_string(c.column) + " (rank " +
           std::to_string(rank) + ", cell " + std::to_string(index + 1) + "): ";
  };

  std::vector<Program> programs(rows.size());
  std::unordered_map<StageId, Located> stage_home;
  MicrobatchId max_mb = -1;
  StageId max_stage = -1;
  for (size_t r = 0; r < rows.size(); ++r) {
    Program& program = programs[r];
    program.reserve(rows[r].cells.size());
    for (size_t i = 0; i < rows[r].cells.size(); ++i) {
      const Cell& cell = rows[r].cells[i];
      const std::string_view text = Strip(cell.text);
      if (text.empty()) {
        program.push_back(kIdleAction);
        continue;
      }
      ActionTextError e;
      std::optional<Action> a = ParseActionText(text, kinds, &e);
      if (!a) {
        std::string hint = PyTorchOnlyHint(text);
        if (hint.empty()) hint = e.hint;
        return Status::InvalidArgument(where(cell, r, i) + e.problem + " at column " + std::to_string(e.column) +
                                       " of '" + PrintableText(text) + "'; " + hint);
      }
      if (!IsCompute(a->kind)) {
        return Status::InvalidArgument(
            where(cell, r, i) + "'" + PrintableText(text) +
            "' is not a compute action; the compute-only CSV holds only F, B, I and W, and pipewright adds "
            "communication, REDUCE_GRAD and OPT itself (lowering passes); keep such schedules in the text format");
      }
      if (options.num_microbatches > 0 && a->microbatch >= options.num_microbatches) {
        return Status::InvalidArgument(where(cell, r, i) + "microbatch " + std::to_string(a->microbatch) +
                                       " is out of range: " + std::to_string(options.num_microbatches) +
                                       " microbatches were asked for (0.." +
                                       std::to_string(options.num_microbatches - 1) +
                                       "); raise the microbatch count or let it be inferred");
      }
      auto [it, inserted] = stage_home.try_emplace(a->stage, Located{static_cast<RankId>(r), cell.line, cell.column});
      if (!inserted && it->second.rank != static_cast<RankId>(r)) {
        return Status::InvalidArgument(
            where(cell, r, i) + "stage " + std::to_string(a->stage) + " runs on rank " + std::to_string(r) +
            " here but on rank " + std::to_string(it->second.rank) + " at " + source + ":" +
            std::to_string(it->second.line) + ":" + std::to_string(it->second.column) +
            "; a stage lives on one rank, so move its actions to one row");
      }
      max_mb = std::max(max_mb, a->microbatch);
      max_stage = std::max(max_stage, a->stage);
      program.push_back(*a);
    }
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    bool owns_stage = false;
    for (const Action& a : programs[r]) owns_stage = owns_stage || a.kind != ActionKind::kIdle;
    if (!owns_stage) {
      return Status::InvalidArgument(
          source + ":" + std::to_string(rows[r].line) + ": row " + std::to_string(r + 1) +
          " (rank " + std::to_string(r) + ") has no actions, so rank " + std::to_string(r) +
          " owns no stage; every rank needs one (an empty line counts as a row: remove stray blank lines)");
    }
  }
  // Every stage 0..max_stage must appear somewhere, or the placement is
  // unknowable. Checked before allocating by max_stage, which a garbage cell
  // could make huge.
  if (static_cast<size_t>(max_stage) + 1 != stage_home.size()) {
    StageId missing = 0;
    while (stage_home.count(missing) != 0) ++missing;
    return Status::InvalidArgument(source + ": stage " + std::to_string(missing) +
                                   " appears in no row, but stage " + std::to_string(max_stage) +
                                   " does; the placement cannot be inferred. Every stage from 0 to the "
                                   "largest needs at least one action");
  }
  std::vector<RankId> stage_to_rank(stage_home.size());
  for (const auto& [stage, home] : stage_home) stage_to_rank[stage] = home.rank;
  Result<Placement> placement = Placement::FromStageToRank(std::move(stage_to_rank), static_cast<int>(rows.size()));
  if (!placement.ok()) return placement.status().WithContext(source);

  const int m = options.num_microbatches > 0 ? options.num_microbatches : max_mb + 1;
  Schedule s = MakeEmptySchedule(options.name.empty() ? FileStem(source_name) : options.name,
                                 std::move(placement).value(), m);
  s.programs = std::move(programs);

  if (options.legacy_b_means_input) {
    std::set<std::pair<StageId, MicrobatchId>> has_w;
    for (const Program& p : s.programs) {
      for (const Action& a : p) {
        if (a.kind == ActionKind::kBackwardWeight) has_w.insert({a.stage, a.microbatch});
      }
    }
    for (Program& p : s.programs) {
      for (Action& a : p) {
        if (a.kind == ActionKind::kBackward && has_w.count({a.stage, a.microbatch}) != 0) {
          a.kind = ActionKind::kBackwardInput;
        }
      }
    }
  }
  return s;
}

}  // namespace pw
