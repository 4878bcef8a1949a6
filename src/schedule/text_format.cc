#include "schedule/text_format.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "core/text.h"
#include "schedule/action_text.h"

namespace pw {
namespace {

constexpr std::string_view kVersionPrefix = "# pipewright schedule";
constexpr std::string_view kVersion = "v1";

// ---------------------------------------------------------------- format ---

std::string FormatDouble(double x) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), x);
  PW_CHECK(ec == std::errc(), "to_chars failed for a double");
  return std::string(buf, ptr);
}

std::string KindList(const std::vector<ActionKind>& list, const KindRegistry& kinds) {
  std::string out;
  for (ActionKind k : list) {
    if (!out.empty()) out += ',';
    out += kinds.Name(k);
  }
  return out;
}

// The name line holds the rest of a line up to a comment, trimmed; keep
// what it can hold and replace the rest so the file still parses.
std::string SanitizedName(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (c == '#' || c == '\n' || c == '\r') c = '_';
  }
  const size_t begin = out.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  const size_t end = out.find_last_not_of(" \t");
  return out.substr(begin, end - begin + 1);
}

// ----------------------------------------------------------------- parse ---

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

struct Token {
  std::string_view text;
  int column = 1;  // 1-based column of the first character in its line
};

// Splits `content` (which starts at column `first_column`) at blanks.
std::vector<Token> Tokenize(std::string_view content, int first_column) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < content.size()) {
    while (i < content.size() && IsBlank(content[i])) ++i;
    const size_t begin = i;
    while (i < content.size() && !IsBlank(content[i])) ++i;
    if (i > begin) out.push_back({content.substr(begin, i - begin), first_column + static_cast<int>(begin)});
  }
  return out;
}

struct HeaderLine {
  int line = 0;
  Token keyword;
  std::vector<Token> args;
  std::string_view rest;  // text after the keyword, trimmed (for `name`)
};

struct RankLine {
  int line = 0;
  int rank_column = 0;
  int64_t rank = 0;
  std::vector<Token> actions;
};

class TextParser {
 public:
  explicit TextParser(std::string_view source) : source_(source) {}

  Result<Schedule> Parse(std::string_view text);

 private:
  // `what` and `hint` quote the input, which may hold any byte but '\n':
  // PrintableText keeps the message on one line.
  Status Error(int line, int column, std::string_view what, std::string_view hint) const {
    std::string msg = std::string(source_) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
                      PrintableText(what);
    if (!hint.empty()) msg += "; " + PrintableText(hint);
    return Status::InvalidArgument(std::move(msg));
  }
  Status FileError(std::string_view what, std::string_view hint) const {
    return Status::InvalidArgument(std::string(source_) + ": " + PrintableText(what) + "; " + PrintableText(hint));
  }

  Status ScanLine(int line, std::string_view raw);
  Status ScanRankLine(int line, std::string_view content, const Token& keyword);
  Result<int64_t> ParseInteger(int line, const Token& t, int64_t min, int64_t max, std::string_view what,
                               std::string_view hint) const;
  Result<int64_t> SingleInteger(const HeaderLine& h, int64_t min, int64_t max, std::string_view hint) const;
  Status ParseKindLine(const HeaderLine& h, KindRegistry& kinds) const;

  std::string_view source_;
  std::optional<HeaderLine> name_, ranks_, microbatches_, placement_;
  std::vector<HeaderLine> kinds_;
  std::vector<RankLine> rank_lines_;
};

Result<int64_t> TextParser::ParseInteger(int line, const Token& t, int64_t min, int64_t max,
                                         std::string_view what, std::string_view hint) const {
  int64_t value = 0;
  const char* end = t.text.data() + t.text.size();
  auto [ptr, ec] = std::from_chars(t.text.data(), end, value);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && ptr == end && (value < min || value > max))) {
    return Error(line, t.column,
                 std::string(what) + " '" + std::string(t.text) + "' is out of range " + std::to_string(min) +
                     ".." + std::to_string(max),
                 hint);
  }
  if (ec != std::errc() || ptr != end) {
    return Error(line, t.column, "expected " + std::string(what) + " (a whole number), found '" +
                                     std::string(t.text) + "'", hint);
  }
  return value;
}

Result<int64_t> TextParser::SingleInteger(const HeaderLine& h, int64_t min, int64_t max,
                                          std::string_view hint) const {
  const std::string key(h.keyword.text);
  if (h.args.size() != 1) {
    const int col = h.args.empty() ? h.keyword.column + static_cast<int>(h.keyword.text.size()) : h.args[1].column;
    return Error(h.line, col, "'" + key + "' takes exactly one number, found " + std::to_string(h.args.size()),
                 hint);
  }
  return ParseInteger(h.line, h.args[0], min, max, "the number of " + key, hint);
}

Status TextParser::ScanRankLine(int line, std::string_view content, const Token& keyword) {
  constexpr std::string_view kHint = "rank lines look like 'rank 0: 0F0 0F1 . 0B0'";
  size_t i = static_cast<size_t>(keyword.column - 1) + keyword.text.size();
  while (i < content.size() && IsBlank(content[i])) ++i;
  const size_t num_begin = i;
  while (i < content.size() && content[i] >= '0' && content[i] <= '9') ++i;
  const int num_column = static_cast<int>(num_begin) + 1;
  if (i == num_begin) {
    return Error(line, num_column,
                 i < content.size() ? "expected a rank number, found '" + std::string(1, content[i]) + "'"
                                    : std::string("expected a rank number, found the end of the line"),
                 kHint);
  }
  Token num{content.substr(num_begin, i - num_begin), num_column};
  PW_ASSIGN_OR_RETURN(int64_t rank, ParseInteger(line, num, 0, std::numeric_limits<int32_t>::max(),
                                                 "rank number", kHint));
  while (i < content.size() && IsBlank(content[i])) ++i;
  if (i >= content.size() || content[i] != ':') {
    return Error(line, static_cast<int>(i) + 1,
                 "expected ':' after 'rank " + std::string(num.text) + "'", kHint);
  }
  ++i;
  for (const RankLine& r : rank_lines_) {
    if (r.rank == rank) {
      return Error(line, num_column,
                   "rank " + std::to_string(rank) + " already has a line (line " + std::to_string(r.line) + ")",
                   "write each rank's whole program on one line");
    }
  }
  rank_lines_.push_back({line, num_column, rank, Tokenize(content.substr(i), static_cast<int>(i) + 1)});
  return Status::Ok();
}

Status TextParser::ScanLine(int line, std::string_view raw) {
  // The version line is a comment with meaning.
  size_t lead = 0;
  while (lead < raw.size() && IsBlank(raw[lead])) ++lead;
  const std::string_view after_prefix = raw.substr(lead).substr(std::min(raw.size() - lead, kVersionPrefix.size()));
  if (raw.substr(lead).starts_with(kVersionPrefix) && (after_prefix.empty() || IsBlank(after_prefix[0]))) {
    std::vector<Token> t = Tokenize(after_prefix, static_cast<int>(lead + kVersionPrefix.size()) + 1);
    // Only "vN" is a version; any other words make it a plain comment.
    if (t.size() == 1 && t[0].text.size() >= 2 && t[0].text[0] == 'v' && t[0].text != kVersion &&
        t[0].text.find_first_not_of("0123456789", 1) == std::string_view::npos) {
      return Error(line, t[0].column, "unsupported format version '" + std::string(t[0].text) + "'",
                   "this pipewright reads '" + std::string(kVersionPrefix) + " " + std::string(kVersion) + "'");
    }
    return Status::Ok();
  }
  const std::string_view content = raw.substr(0, raw.find('#'));
  std::vector<Token> tokens = Tokenize(content, 1);
  if (tokens.empty()) return Status::Ok();
  const Token& keyword = tokens[0];
  if (keyword.text == "rank") return ScanRankLine(line, content, keyword);

  HeaderLine h;
  h.line = line;
  h.keyword = keyword;
  h.args.assign(tokens.begin() + 1, tokens.end());
  const size_t rest_begin = static_cast<size_t>(keyword.column - 1) + keyword.text.size();
  std::string_view rest = content.substr(rest_begin);
  while (!rest.empty() && IsBlank(rest.front())) rest.remove_prefix(1);
  while (!rest.empty() && IsBlank(rest.back())) rest.remove_suffix(1);
  h.rest = rest;

  if (keyword.text == "kind") {
    kinds_.push_back(std::move(h));
    return Status::Ok();
  }
  std::optional<HeaderLine>* slot = nullptr;
  if (keyword.text == "name") slot = &name_;
  if (keyword.text == "ranks") slot = &ranks_;
  if (keyword.text == "microbatches") slot = &microbatches_;
  if (keyword.text == "placement") slot = &placement_;
  if (slot == nullptr) {
    std::string hint = "lines start with name, ranks, microbatches, placement, kind or 'rank N:'";
    if (keyword.text.starts_with("rank") && keyword.text.size() > 4) {
      hint = "put a blank after 'rank', as in 'rank 0: 0F0'";
    }
    return Error(line, keyword.column, "unknown line keyword '" + std::string(keyword.text) + "'", hint);
  }
  if (slot->has_value()) {
    return Error(line, keyword.column,
                 "duplicate '" + std::string(keyword.text) + "' line (first at line " +
                     std::to_string((*slot)->line) + ")",
                 "keep one");
  }
  *slot = std::move(h);
  return Status::Ok();
}

Status TextParser::ParseKindLine(const HeaderLine& h, KindRegistry& kinds) const {
  constexpr std::string_view kHint = "kind lines look like 'kind OFFLOAD cost=0.5 memory=-1 after=F before=B,I'";
  if (h.args.empty()) {
    return Error(h.line, h.keyword.column + 4, "expected a kind name after 'kind'", kHint);
  }
  KindInfo info;
  info.name = std::string(h.args[0].text);
  bool seen[5] = {false, false, false, false, false};
  constexpr std::string_view kKeys[5] = {"cost", "memory", "after", "before", "microbatch"};
  for (size_t i = 1; i < h.args.size(); ++i) {
    const Token& t = h.args[i];
    const size_t eq = t.text.find('=');
    if (eq == std::string_view::npos) {
      return Error(h.line, t.column, "expected key=value, found '" + std::string(t.text) + "'", kHint);
    }
    const std::string_view key = t.text.substr(0, eq);
    const std::string_view value = t.text.substr(eq + 1);
    const int value_column = t.column + static_cast<int>(eq) + 1;
    int k = 0;
    while (k < 5 && kKeys[k] != key) ++k;
    if (k == 5) {
      return Error(h.line, t.column, "unknown kind property '" + std::string(key) + "'",
                   "properties are cost, memory, after, before and microbatch");
    }
    if (seen[k]) return Error(h.line, t.column, "'" + std::string(key) + "' given twice", "keep one");
    seen[k] = true;
    if (k <= 1) {  // cost, memory: a number
      double x = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
      if (value.empty() || ec != std::errc() || ptr != value.data() + value.size()) {
        return Error(h.line, value_column,
                     "expected a number for " + std::string(key) + ", found '" + std::string(value) + "'", kHint);
      }
      (k == 0 ? info.default_cost : info.memory_delta_fraction) = x;
    } else if (k <= 3) {  // after, before: K,K,...
      std::vector<ActionKind>& list = k == 2 ? info.after : info.before;
      size_t begin = 0;
      while (begin <= value.size()) {
        size_t end = value.find(',', begin);
        if (end == std::string_view::npos) end = value.size();
        const std::string_view name = value.substr(begin, end - begin);
        std::optional<ActionKind> found = kinds.Find(name);
        if (!found || *found == ActionKind::kIdle) {
          return Error(h.line, value_column + static_cast<int>(begin),
                       "unknown kind '" + std::string(name) + "' in " + std::string(key),
                       "name built-in kinds (F, B, I, W, ...) or kinds defined on earlier lines, comma-separated");
        }
        list.push_back(*found);
        begin = end + 1;
      }
    } else {  // microbatch=yes|no
      if (value != "yes" && value != "no") {
        return Error(h.line, value_column, "expected yes or no for microbatch, found '" + std::string(value) + "'",
                     "microbatch=no makes a kind that is written without a microbatch, like 0OPT");
      }
      info.has_microbatch = value == "yes";
    }
  }
  Result<ActionKind> registered = kinds.Register(std::move(info));
  if (!registered.ok()) return Error(h.line, h.args[0].column, registered.status().message(), "");
  return Status::Ok();
}

Result<Schedule> TextParser::Parse(std::string_view text) {
  int line = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view raw = text.substr(pos, end - pos);
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    ++line;
    PW_RETURN_IF_ERROR(ScanLine(line, raw));
    pos = end + 1;
  }

  if (!ranks_) return FileError("missing 'ranks' line", "add one, e.g. 'ranks 4'");
  if (!microbatches_) return FileError("missing 'microbatches' line", "add one, e.g. 'microbatches 8'");
  if (!placement_) {
    return FileError("missing 'placement' line", "add the rank of each stage, e.g. 'placement 0 1 2 3'");
  }
  PW_ASSIGN_OR_RETURN(const int64_t num_ranks,
                      SingleInteger(*ranks_, 1, std::numeric_limits<int32_t>::max(), "e.g. 'ranks 4'"));
  PW_ASSIGN_OR_RETURN(const int64_t num_mb, SingleInteger(*microbatches_, 1, std::numeric_limits<int32_t>::max(),
                                                          "e.g. 'microbatches 8'"));
  // Placement: check the size first so that a huge `ranks` never allocates.
  const HeaderLine& pl = *placement_;
  if (static_cast<int64_t>(pl.args.size()) < num_ranks) {
    return Error(pl.line, pl.keyword.column,
                 "placement lists " + std::to_string(pl.args.size()) + " stages but 'ranks' is " +
                     std::to_string(num_ranks) + " (line " + std::to_string(ranks_->line) + ")",
                 "every rank needs at least one stage; give one rank per stage, e.g. 'placement 0 1 2 3'");
  }
  std::vector<RankId> stage_to_rank;
  stage_to_rank.reserve(pl.args.size());
  for (const Token& t : pl.args) {
    PW_ASSIGN_OR_RETURN(int64_t r, ParseInteger(pl.line, t, 0, num_ranks - 1, "rank",
                                                "each entry is the rank (0..ranks-1) of one stage"));
    stage_to_rank.push_back(static_cast<RankId>(r));
  }
  Result<Placement> placement = Placement::FromStageToRank(std::move(stage_to_rank), static_cast<int>(num_ranks));
  if (!placement.ok()) {
    return Error(pl.line, pl.keyword.column, placement.status().message(), "list the rank of each stage");
  }

  Schedule s = MakeEmptySchedule(name_ ? std::string(name_->rest) : std::string(), std::move(placement).value(),
                                 static_cast<int>(num_mb));
  for (const HeaderLine& h : kinds_) PW_RETURN_IF_ERROR(ParseKindLine(h, s.kinds));

  std::vector<int> line_of_rank(num_ranks, 0);
  for (const RankLine& r : rank_lines_) {
    if (r.rank >= num_ranks) {
      return Error(r.line, r.rank_column,
                   "rank " + std::to_string(r.rank) + " is out of range: 'ranks' is " + std::to_string(num_ranks),
                   "ranks are numbered 0.." + std::to_string(num_ranks - 1));
    }
    line_of_rank[r.rank] = r.line;
    Program& program = s.programs[r.rank];
    program.reserve(r.actions.size());
    for (const Token& t : r.actions) {
      if (t.text == ".") {
        program.push_back(kIdleAction);
        continue;
      }
      ActionTextError e;
      std::optional<Action> a = ParseActionText(t.text, s.kinds, &e);
      if (!a) {
        return Error(r.line, t.column + e.column - 1, e.problem + " in '" + std::string(t.text) + "'",
                     e.hint + (e.column == 1 && t.text.size() == 1 ? "; write an idle step as '.'" : ""));
      }
      if (a->stage >= s.num_stages()) {
        return Error(r.line, t.column,
                     "stage " + std::to_string(a->stage) + " in '" + std::string(t.text) +
                         "' is out of range: the placement has " + std::to_string(s.num_stages()) + " stages",
                     "stages are numbered 0.." + std::to_string(s.num_stages() - 1) +
                         "; add stages to the placement line or fix the action");
      }
      if (a->microbatch >= num_mb) {
        return Error(r.line, t.column,
                     "microbatch " + std::to_string(a->microbatch) + " in '" + std::string(t.text) +
                         "' is out of range: 'microbatches' is " + std::to_string(num_mb),
                     "microbatches are numbered 0.." + std::to_string(num_mb - 1) +
                         "; raise 'microbatches' or fix the action");
      }
      program.push_back(*a);
    }
  }
  for (int64_t r = 0; r < num_ranks; ++r) {
    if (line_of_rank[r] == 0) {
      return FileError("no line for rank " + std::to_string(r),
                       "add 'rank " + std::to_string(r) + ":' followed by its actions (it may be empty)");
    }
  }
  return s;
}

}  // namespace

std::string FormatScheduleText(const Schedule& schedule) {
  const KindRegistry& kinds = schedule.kinds;
  std::string out;
  out += kVersionPrefix;
  out += ' ';
  out += kVersion;
  out += '\n';
  const std::string name = SanitizedName(schedule.name);
  out += name.empty() ? "name\n" : "name " + name + "\n";
  out += "ranks " + std::to_string(schedule.num_ranks()) + "\n";
  out += "microbatches " + std::to_string(schedule.num_microbatches) + "\n";
  out += "placement";
  for (RankId r : schedule.placement.stage_to_rank()) out += " " + std::to_string(r);
  out += '\n';
  for (ActionKind k : kinds.UserKinds()) {
    const KindInfo& info = kinds.Info(k);
    out += "kind " + info.name + " cost=" + FormatDouble(info.default_cost) +
           " memory=" + FormatDouble(info.memory_delta_fraction);
    if (!info.after.empty()) out += " after=" + KindList(info.after, kinds);
    if (!info.before.empty()) out += " before=" + KindList(info.before, kinds);
    if (!info.has_microbatch) out += " microbatch=no";
    out += '\n';
  }
  for (size_t r = 0; r < schedule.programs.size(); ++r) {
    out += "rank " + std::to_string(r) + ":";
    for (const Action& a : schedule.programs[r]) {
      out += ' ';
      out += a.kind == ActionKind::kIdle ? std::string(".") : FormatAction(a, kinds);
    }
    out += '\n';
  }
  return out;
}

Result<Schedule> ParseScheduleText(std::string_view text, std::string_view source_name) {
  return TextParser(source_name).Parse(text);
}

}  // namespace pw
