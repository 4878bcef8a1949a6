// ParsePipeProgram and LoadPipeFile (dsl/parser.h). One pass over the lines
// (dsl/lexer.h cuts each into tokens) fills a PipeProgram directive by
// directive, so a kind must be declared above its first use; checks that
// relate two directives (`backward` vs `priority`/`defer`, `ranks` vs pinned
// ranks and explicit placements) run in Finish, after the last line, so
// those directives may come in any order. The printer is pipe_printer.cc.
#include "dsl/parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "core/file_io.h"
#include "core/text.h"
#include "core/units.h"
#include "dsl/lexer.h"
#include "schedule/action_text.h"

namespace pw::dsl {
namespace {

// Caps that keep hostile input cheap; each is far above any real schedule
// (README plans p = 1024, m = 8192).
constexpr size_t kMaxInputBytes = size_t{64} << 20;
constexpr size_t kMaxLineBytes = size_t{1} << 20;
// Long expressions nest deeply (a chain of 1000 '+' is a tree 1000 deep) and
// Expr recurses when it prints or evaluates; this keeps the stack small.
constexpr size_t kMaxExprBytes = 2048;
constexpr int64_t kMaxRanks = int64_t{1} << 20;
constexpr int64_t kMaxMicrobatches = int64_t{1} << 24;
constexpr int64_t kMaxChunks = 1024;
constexpr int64_t kMaxKindPriority = 1'000'000;
constexpr int64_t kMaxLayers = int64_t{1} << 20;

enum Directive : int {
  kSchedule, kRanks, kMicrobatches, kPlacement, kLayers, kCosts, kBackward, kMemory, kPriority,
  kTraversal, kWarmup, kDefer, kKind, kRank, kNumDirectives,
};

struct DirectiveInfo {
  std::string_view keyword;
  std::string_view example;
};

constexpr DirectiveInfo kDirectives[kNumDirectives] = {
    {"schedule", "schedule zb-h1"},
    {"ranks", "ranks 4"},
    {"microbatches", "microbatches 8"},
    {"placement", "placement interleaved 2"},
    {"layers", "layers 1 2 1"},
    {"costs", "costs best.costs.json"},
    {"backward", "backward split"},
    {"memory", "memory p - r microbatches"},
    {"priority", "priority B > F"},
    {"traversal", "traversal depth-first"},
    {"warmup", "warmup p - r - 1"},
    {"defer", "defer W max r"},
    {"kind", "kind OFFLOAD cost=0.5 memory=-1 after=F before=B"},
    {"rank", "rank 0: 0F0 0B0"},
};

constexpr std::string_view kKindOptions[] = {"cost", "memory", "after", "before", "stages", "priority", "microbatch"};

// "did you mean 'X'?" for the choice nearest to `word`, or "" when none is
// near enough to be a likely typo.
template <typename Range, typename Get>
std::string DidYouMean(std::string_view word, const Range& choices, Get get) {
  if (word.size() > 64) return "";
  std::string_view best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (const auto& c : choices) {
    const std::string_view name = get(c);
    const size_t d = EditDistance(word, name);
    if (d < best_distance) {
      best_distance = d;
      best = name;
    }
  }
  if (best_distance > std::max<size_t>(1, std::min<size_t>(3, (best.size() + 1) / 2))) {
    // A clipped word ("depth" for "depth-first") is far by edit distance.
    best = {};
    for (const auto& c : choices) {
      if (word.size() >= 3 && get(c).starts_with(word)) best = get(c);
    }
    if (best.empty()) return "";
  }
  return "did you mean '" + std::string(best) + "'?";
}

bool IsPolicyKind(ActionKind k) { return IsCompute(k) || IsUserKind(k); }

// One span of a line as an expression or free text sees it: a single quoted
// token gives its contents, anything else the text as written.
struct Span {
  std::string text;
  int column = 1;
};

Span SpanOf(const LexedLine& l, size_t first, size_t last) {
  if (last == first + 1 && l.tokens[first].quoted) return {l.tokens[first].value, l.tokens[first].column + 1};
  const Token& a = l.tokens[first];
  const Token& b = l.tokens[last - 1];
  const size_t begin = static_cast<size_t>(a.column - 1);
  const size_t end = static_cast<size_t>(b.column - 1) + b.text.size();
  return {std::string(l.content.substr(begin, end - begin)), a.column};
}

class PipeParser {
 public:
  explicit PipeParser(std::string_view source) : source_(source.empty() ? "<input>" : source) {
    program_.source_name = std::string(source);
  }

  Result<PipeProgram> Run(std::string_view text);

 private:
  Status Error(int line, int column, std::string_view what, std::string_view expected,
               std::string_view hint) const {
    return SyntaxError(source_, line, column, what, expected, hint);
  }
  // Where a missing value would start: just past the line's content.
  static int EndColumn(const LexedLine& l) { return static_cast<int>(l.content.size()) + 1; }

  Status MissingValue(const LexedLine& l, Directive d, std::string_view expected) const {
    const std::string_view kw = kDirectives[d].keyword;
    return Error(l.number, EndColumn(l), "missing value after '" + std::string(kw) + "'", expected,
                 "e.g. '" + std::string(kDirectives[d].example) + "'");
  }
  Status ExpectEnd(const LexedLine& l, size_t index, std::string_view after) const {
    if (l.tokens.size() <= index) return Status::Ok();
    return Error(l.number, l.tokens[index].column,
                 "unexpected '" + std::string(l.tokens[index].text) + "' after " + std::string(after),
                 "the end of the line", "start a comment with '#'");
  }
  Result<int64_t> Integer(const LexedLine& l, const Token& t, int64_t min, int64_t max, std::string_view what,
                          std::string_view hint) const;
  Result<double> Number(const LexedLine& l, std::string_view text, int column, std::string_view what) const;
  Result<Expr> ExprOf(const LexedLine& l, size_t first, size_t last, Directive d) const;
  Result<std::vector<ActionKind>> KindList(const LexedLine& l, std::string_view text, int column,
                                           std::string_view option) const;

  Status ParseLine(const LexedLine& l);
  Status ParseSchedule(const LexedLine& l);
  Status ParseShape(const LexedLine& l, Directive d);
  Status ParsePlacement(const LexedLine& l);
  Status ParseLayers(const LexedLine& l);
  Status ParseCosts(const LexedLine& l);
  Status ParseMemory(const LexedLine& l);
  Status ParseTraversal(const LexedLine& l);
  Status ParsePriority(const LexedLine& l);
  Status ParseDefer(const LexedLine& l);
  Status ParseKind(const LexedLine& l);
  Status ParseKindOption(const LexedLine& l, const Token& t, KindDecl& decl, bool* seen);
  Status ParsePinned(const LexedLine& l);
  Status Finish();

  std::string source_;
  PipeProgram program_;
  KindRegistry kinds_;                     // built-ins plus the kinds declared so far
  int line_of_[kNumDirectives] = {};       // first line of each directive; 0 = absent
  int column_of_[kNumDirectives] = {};     // and the column of its keyword
  std::vector<int> placement_columns_;     // kExplicit: column of each entry
  std::vector<std::pair<ActionKind, int>> priority_columns_;
  std::map<RankId, int> pinned_rank_column_;
};

Result<int64_t> PipeParser::Integer(const LexedLine& l, const Token& t, int64_t min, int64_t max,
                                    std::string_view what, std::string_view hint) const {
  const std::string expected = "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  int64_t value = 0;
  const char* end = t.text.data() + t.text.size();
  auto [ptr, ec] = std::from_chars(t.text.data(), end, value);
  if (ec == std::errc::result_out_of_range && ptr == end) {
    return Error(l.number, t.column, std::string(what) + " '" + std::string(t.text) + "' is too large", expected, hint);
  }
  if (ec != std::errc() || ptr != end) {
    return Error(l.number, t.column, "expected " + std::string(what) + ", found '" + std::string(t.text) + "'",
                 expected, hint);
  }
  if (value < min || value > max) {
    return Error(l.number, t.column,
                 std::string(what) + " " + std::to_string(value) + " is out of range", expected, hint);
  }
  return value;
}

Result<double> PipeParser::Number(const LexedLine& l, std::string_view text, int column,
                                  std::string_view what) const {
  double x = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(x)) {
    return Error(l.number, column, "expected a number for " + std::string(what) + ", found '" + std::string(text) + "'",
                 "a finite decimal number such as 0.5, -1 or 2e-3", "");
  }
  return x;
}

Result<Expr> PipeParser::ExprOf(const LexedLine& l, size_t first, size_t last, Directive d) const {
  const std::string hint = "e.g. '" + std::string(kDirectives[d].example) + "'";
  if (first >= last) return MissingValue(l, d, "an expression over p r m v S");
  const Span s = SpanOf(l, first, last);
  if (s.text.size() > kMaxExprBytes) {
    return Error(l.number, s.column, "expression of " + std::to_string(s.text.size()) + " characters is too long",
                 "at most " + std::to_string(kMaxExprBytes) + " characters", "simplify it");
  }
  int col = 1;
  Result<Expr> e = Expr::ParseAt(s.text, &col);
  if (e.ok()) {
    // The printer spaces operators out, so the canonical text can be longer
    // than what was written; cap it too so that printed programs read back.
    const size_t printed = e->ToString().size();
    if (printed > kMaxExprBytes) {
      return Error(l.number, s.column, "expression is too long (" + std::to_string(printed) + " characters as printed)",
                   "at most " + std::to_string(kMaxExprBytes) + " characters", "simplify it");
    }
    return e;
  }
  return Error(l.number, s.column + col - 1, "bad expression: " + e.status().message(), "", hint);
}

Result<std::vector<ActionKind>> PipeParser::KindList(const LexedLine& l, std::string_view text, int column,
                                                     std::string_view option) const {
  std::vector<ActionKind> out;
  size_t begin = 0;
  while (true) {
    size_t end = text.find(',', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view name = text.substr(begin, end - begin);
    const int at = column + static_cast<int>(begin);
    std::optional<ActionKind> k = kinds_.Find(name);
    if (!k || *k == ActionKind::kIdle) {
      return Error(l.number, at, "unknown kind '" + std::string(name) + "' in " + std::string(option),
                   "built-in kinds (F, B, I, W, ...) or kinds declared on earlier lines, separated by ','",
                   "declare a kind before naming it");
    }
    if (std::find(out.begin(), out.end(), *k) != out.end()) {
      return Error(l.number, at, "'" + std::string(name) + "' is listed twice in " + std::string(option), "", "keep one");
    }
    out.push_back(*k);
    if (end == text.size()) return out;
    begin = end + 1;
  }
}

Status PipeParser::ParseLine(const LexedLine& l) {
  const Token& kw = l.tokens[0];
  int d = 0;
  while (d < kNumDirectives && (kw.quoted || kDirectives[d].keyword != kw.text)) ++d;
  if (d == kNumDirectives) {
    std::string hint = DidYouMean(kw.text, kDirectives, [](const DirectiveInfo& i) { return i.keyword; });
    if (kw.text.starts_with("rank") && kw.text.size() > 4 && (kw.text[4] >= '0' && kw.text[4] <= '9')) {
      hint = "put a blank after 'rank', as in 'rank 0: 0F0'";
    }
    if (kw.text == "name") hint = "name the schedule with 'schedule <name>'";
    std::string expected = "one of";
    for (const DirectiveInfo& i : kDirectives) expected += " " + std::string(i.keyword);
    return Error(l.number, kw.column, "unknown keyword '" + std::string(kw.text) + "'", expected,
                 hint.empty() ? "keywords are lower case; '#' starts a comment" : hint);
  }
  const auto dir = static_cast<Directive>(d);
  if (dir != kKind && dir != kRank) {
    if (line_of_[dir] != 0) {
      return Error(l.number, kw.column,
                   "duplicate '" + std::string(kw.text) + "' (first at line " + std::to_string(line_of_[dir]) + ")",
                   "each directive at most once", "remove one of the two lines");
    }
  }
  if (line_of_[dir] == 0) {
    line_of_[dir] = l.number;
    column_of_[dir] = kw.column;
  }
  const size_t n = l.tokens.size();
  switch (dir) {
    case kSchedule: return ParseSchedule(l);
    case kRanks:
    case kMicrobatches: return ParseShape(l, dir);
    case kPlacement: return ParsePlacement(l);
    case kLayers: return ParseLayers(l);
    case kCosts: return ParseCosts(l);
    case kTraversal: return ParseTraversal(l);
    case kBackward: {
      constexpr std::string_view kModes[] = {"fused", "split"};
      if (n < 2) return MissingValue(l, dir, "'fused' or 'split'");
      const Token& t = l.tokens[1];
      if (t.text != kModes[0] && t.text != kModes[1]) {
        return Error(l.number, t.column, "unknown backward '" + std::string(t.text) + "'", "'fused' or 'split'",
                     DidYouMean(t.text, kModes, [](std::string_view s) { return s; }));
      }
      program_.split_backward = t.text == kModes[1];
      return ExpectEnd(l, 2, "'" + std::string(t.text) + "'");
    }
    case kMemory: return ParseMemory(l);
    case kPriority: return ParsePriority(l);
    case kWarmup: {
      PW_ASSIGN_OR_RETURN(Expr e, ExprOf(l, 1, n, dir));
      program_.policy.warmup = std::move(e);
      program_.policy.warmup_loc = {l.number, l.tokens[1].column};
      return Status::Ok();
    }
    case kDefer: return ParseDefer(l);
    case kKind: return ParseKind(l);
    case kRank: return ParsePinned(l);
    case kNumDirectives: break;
  }
  return Status::Internal("unhandled directive");
}

Status PipeParser::ParseSchedule(const LexedLine& l) {
  if (l.tokens.size() < 2) return MissingValue(l, kSchedule, "a name");
  if (l.tokens[1].quoted) {
    program_.name = l.tokens[1].value;
    return ExpectEnd(l, 2, "the quoted name");
  }
  // A bare name is the rest of the line, so it may hold blanks.
  program_.name = std::string(l.content.substr(static_cast<size_t>(l.tokens[1].column - 1)));
  return Status::Ok();
}

Status PipeParser::ParseShape(const LexedLine& l, Directive d) {
  const bool ranks = d == kRanks;
  const int64_t max = ranks ? kMaxRanks : kMaxMicrobatches;
  const std::string hint = "e.g. '" + std::string(kDirectives[d].example) + "'";
  if (l.tokens.size() < 2) return MissingValue(l, d, "a whole number from 1 to " + std::to_string(max));
  PW_ASSIGN_OR_RETURN(int64_t v, Integer(l, l.tokens[1], 1, max, ranks ? "the number of ranks" : "the number of microbatches", hint));
  (ranks ? program_.ranks : program_.microbatches) = static_cast<int>(v);
  return ExpectEnd(l, 2, "the number");
}

Status PipeParser::ParsePlacement(const LexedLine& l) {
  constexpr std::string_view kExpected = "sequential, interleaved <chunks>, vshape or explicit <rank of each stage>";
  if (l.tokens.size() < 2) return MissingValue(l, kPlacement, kExpected);
  const Token& style = l.tokens[1];
  PlacementSpec& spec = program_.placement;
  spec.loc = {l.number, l.tokens[0].column};
  if (style.text == "sequential") {
    spec.style = PlacementStyle::kSequential;
    return ExpectEnd(l, 2, "'sequential'");
  }
  if (style.text == "vshape" || style.text == "v-shape") {
    spec.style = PlacementStyle::kVShape;
    return ExpectEnd(l, 2, "'vshape'");
  }
  if (style.text == "interleaved") {
    spec.style = PlacementStyle::kInterleaved;
    if (l.tokens.size() < 3) {
      return Error(l.number, EndColumn(l), "missing the number of chunks after 'interleaved'",
                   "stages per rank, a whole number from 1 to " + std::to_string(kMaxChunks),
                   "e.g. 'placement interleaved 2'");
    }
    PW_ASSIGN_OR_RETURN(int64_t v, Integer(l, l.tokens[2], 1, kMaxChunks, "the number of chunks",
                                           "chunks are the stages each rank owns, e.g. 'placement interleaved 2'"));
    spec.chunks = static_cast<int>(v);
    return ExpectEnd(l, 3, "the number of chunks");
  }
  if (style.text == "explicit") {
    spec.style = PlacementStyle::kExplicit;
    if (l.tokens.size() < 3) {
      return Error(l.number, EndColumn(l), "missing the rank of each stage after 'explicit'",
                   "one rank number per stage", "e.g. 'placement explicit 0 1 1 0'");
    }
    spec.stage_to_rank.clear();
    for (size_t i = 2; i < l.tokens.size(); ++i) {
      PW_ASSIGN_OR_RETURN(int64_t r, Integer(l, l.tokens[i], 0, kMaxRanks - 1, "a rank number",
                                             "list the rank of stage 0, stage 1, ... in order"));
      spec.stage_to_rank.push_back(static_cast<RankId>(r));
      placement_columns_.push_back(l.tokens[i].column);
    }
    return Status::Ok();
  }
  constexpr std::string_view kStyles[] = {"sequential", "interleaved", "vshape", "explicit"};
  std::string hint = DidYouMean(style.text, kStyles, [](std::string_view s) { return s; });
  if (hint.empty() && !style.text.empty() && style.text[0] >= '0' && style.text[0] <= '9') {
    hint = "to list ranks, write 'placement explicit " + std::string(l.content.substr(style.column - 1)) + "'";
  }
  return Error(l.number, style.column, "unknown placement '" + std::string(style.text) + "'", kExpected, hint);
}

// `layers 1 2 1`: model blocks per stage. Only the entries are checked here;
// their count needs the compiled schedule and their sum the model.
Status PipeParser::ParseLayers(const LexedLine& l) {
  if (l.tokens.size() < 2) return MissingValue(l, kLayers, "the number of model blocks of each stage, in stage order");
  program_.layers_loc = {l.number, l.tokens[0].column};
  program_.layers_per_stage.clear();
  for (size_t i = 1; i < l.tokens.size(); ++i) {
    PW_ASSIGN_OR_RETURN(int64_t n, Integer(l, l.tokens[i], 0, kMaxLayers, "the number of blocks",
                                           "list the blocks of stage 0, stage 1, ... in order, e.g. 'layers 1 2 1'"));
    program_.layers_per_stage.push_back(static_cast<int>(n));
  }
  return Status::Ok();
}

// `costs best.costs.json`: the cost model the program was planned with. The
// file is read when the program is loaded (dsl/schedule_source.cc), not here:
// parsing stays a pure function of the text.
Status PipeParser::ParseCosts(const LexedLine& l) {
  if (l.tokens.size() < 2) return MissingValue(l, kCosts, "the path of a cost-model JSON file");
  const Token& t = l.tokens[1];
  if (t.value.empty()) {
    return Error(l.number, t.column, "empty costs path", "the path of a cost-model JSON file",
                 "e.g. '" + std::string(kDirectives[kCosts].example) + "'");
  }
  program_.costs_file = t.value;
  program_.costs_loc = {l.number, l.tokens[0].column};
  return ExpectEnd(l, 2, "the path (quote a path with blanks)");
}

Status PipeParser::ParseTraversal(const LexedLine& l) {
  constexpr std::string_view kExpected = "'depth-first', 'breadth-first' or 'breadth-first group <expression>'";
  const size_t n = l.tokens.size();
  if (n < 2) return MissingValue(l, kTraversal, kExpected);
  const Token& t = l.tokens[1];
  OrderPolicy& policy = program_.policy;
  if (t.text == "depth-first") {
    policy.traversal = Traversal::kDepthFirst;
    if (n > 2 && l.tokens[2].text == "group") {
      return Error(l.number, l.tokens[2].column, "microbatch groups apply to breadth-first traversal only",
                   "the end of the line", "write 'traversal breadth-first group p'");
    }
    return ExpectEnd(l, 2, "'depth-first'");
  }
  if (t.text == "breadth-first") {
    policy.traversal = Traversal::kBreadthFirst;
    if (n == 2) return Status::Ok();
    if (l.tokens[2].text != "group") {
      return Error(l.number, l.tokens[2].column,
                   "unexpected '" + std::string(l.tokens[2].text) + "' after 'breadth-first'",
                   "the end of the line or 'group <expression>'", "e.g. 'traversal breadth-first group p'");
    }
    if (n == 3) {
      return Error(l.number, EndColumn(l), "missing the group size after 'group'", "an expression over p r m v S",
                   "e.g. 'traversal breadth-first group p'");
    }
    PW_ASSIGN_OR_RETURN(Expr e, ExprOf(l, 3, n, kTraversal));
    policy.microbatch_group = std::move(e);
    policy.microbatch_group_loc = {l.number, l.tokens[3].column};
    return Status::Ok();
  }
  constexpr std::string_view kStyles[] = {"depth-first", "breadth-first"};
  return Error(l.number, t.column, "unknown traversal '" + std::string(t.text) + "'", kExpected,
               DidYouMean(t.text, kStyles, [](std::string_view s) { return s; }));
}

Status PipeParser::ParseMemory(const LexedLine& l) {
  constexpr std::string_view kExpected = "'<expression> microbatches' or a size with a unit such as 8GiB";
  const size_t n = l.tokens.size();
  if (n < 2) return MissingValue(l, kMemory, kExpected);
  MemoryCapSpec cap;
  cap.loc = {l.number, l.tokens[1].column};
  const Token& last = l.tokens.back();
  if (!last.quoted && (last.text == "microbatches" || last.text == "microbatch")) {
    if (n < 3) {
      return Error(l.number, last.column, "missing the expression before '" + std::string(last.text) + "'",
                   "an expression over p r m v S", "e.g. 'memory p - r microbatches'");
    }
    PW_ASSIGN_OR_RETURN(cap.microbatches, ExprOf(l, 1, n - 1, kMemory));
    cap.unit = MemoryCapSpec::Unit::kMicrobatches;
    program_.memory_cap = std::move(cap);
    return Status::Ok();
  }
  const Span s = SpanOf(l, 1, n);
  double plain = 0;
  auto [ptr, ec] = std::from_chars(s.text.data(), s.text.data() + s.text.size(), plain);
  if (ec == std::errc() && ptr == s.text.data() + s.text.size()) {
    return Error(l.number, s.column, "'" + s.text + "' has no unit, so it could mean bytes or microbatches",
                 kExpected, "write 'memory " + s.text + " microbatches' or 'memory " + s.text + "GiB'");
  }
  Result<double> bytes = ParseByteSize(s.text);
  if (!bytes.ok() || !std::isfinite(*bytes)) {
    std::string hint = "units are B, KB, MB, GB, TB, KiB, MiB, GiB, TiB";
    if (s.text.size() <= kMaxExprBytes && Expr::Parse(s.text).ok()) {
      hint = "to cap microbatches, end the line with 'microbatches': 'memory " + s.text + " microbatches'";
    }
    return Error(l.number, s.column, "'" + s.text + "' is not a memory cap", kExpected, hint);
  }
  cap.unit = MemoryCapSpec::Unit::kBytes;
  cap.bytes = *bytes;
  program_.memory_cap = std::move(cap);
  return Status::Ok();
}

Status PipeParser::ParsePriority(const LexedLine& l) {
  constexpr std::string_view kExpected = "kind names, highest first, separated by '>', e.g. 'B > F'";
  if (l.tokens.size() < 2) return MissingValue(l, kPriority, kExpected);
  program_.policy.loc = {l.number, l.tokens[0].column};
  const size_t start = static_cast<size_t>(l.tokens[1].column - 1);
  const std::string_view text = l.content.substr(start);
  std::vector<ActionKind> list;
  size_t begin = 0;
  while (true) {
    size_t end = text.find('>', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view piece = text.substr(begin, end - begin);
    size_t lead = 0;
    while (lead < piece.size() && IsBlank(piece[lead])) ++lead;
    piece.remove_prefix(lead);
    while (!piece.empty() && IsBlank(piece.back())) piece.remove_suffix(1);
    const int column = static_cast<int>(start + begin + lead) + 1;
    if (piece.empty()) {
      return Error(l.number, column, "missing a kind name in the priority", kExpected,
                   "every '>' stands between two kinds");
    }
    std::optional<ActionKind> k = kinds_.Find(piece);
    if (!k) {
      std::string hint = "declare user kinds with a 'kind' line above this one";
      if (piece.find_first_of(" \t<,") != std::string_view::npos) hint = "separate kinds with '>', highest first";
      return Error(l.number, column, "unknown kind '" + std::string(piece) + "' in the priority",
                   "F, B, I, W or a kind declared above", hint);
    }
    if (!IsPolicyKind(*k)) {
      return Error(l.number, column, "kind '" + std::string(piece) + "' cannot be prioritised",
                   "F, B, I, W or a kind declared above",
                   "communication, REDUCE_GRAD and OPT are added by lowering passes, not by the policy");
    }
    if (std::find(list.begin(), list.end(), *k) != list.end()) {
      return Error(l.number, column, "'" + std::string(piece) + "' is listed twice in the priority", kExpected,
                   "keep one");
    }
    list.push_back(*k);
    priority_columns_.push_back({*k, column});
    if (end == text.size()) break;
    begin = end + 1;
  }
  program_.policy.kind_priority = std::move(list);
  return Status::Ok();
}

Status PipeParser::ParseDefer(const LexedLine& l) {
  constexpr std::string_view kExpected = "'defer W max <expression>'";
  const size_t n = l.tokens.size();
  if (n < 2) return MissingValue(l, kDefer, kExpected);
  if (l.tokens[1].text != "W") {
    return Error(l.number, l.tokens[1].column, "only W can be deferred, found '" + std::string(l.tokens[1].text) + "'",
                 kExpected, "e.g. 'defer W max r' lets rank r leave r weight-gradient actions pending");
  }
  if (n < 3 || l.tokens[2].text != "max") {
    return Error(l.number, n < 3 ? EndColumn(l) : l.tokens[2].column, "expected 'max' after 'defer W'", kExpected,
                 "e.g. 'defer W max r'");
  }
  PW_ASSIGN_OR_RETURN(Expr e, ExprOf(l, 3, n, kDefer));
  program_.policy.max_deferred_w = std::move(e);
  program_.policy.max_deferred_w_loc = {l.number, l.tokens[3].column};
  return Status::Ok();
}

Status PipeParser::ParseKindOption(const LexedLine& l, const Token& t, KindDecl& decl, bool* seen) {
  constexpr std::string_view kShape = "'key=value' with key cost, memory, after, before, stages, priority or microbatch";
  const size_t eq = t.text.find('=');
  if (t.quoted || eq == std::string_view::npos) {
    return Error(l.number, t.column, "expected an option, found '" + std::string(t.text) + "'", kShape,
                 "e.g. 'kind OFFLOAD cost=0.5 memory=-1 after=F before=B'");
  }
  const std::string_view key = t.text.substr(0, eq);
  const std::string_view value = t.text.substr(eq + 1);
  const int vcol = t.column + static_cast<int>(eq) + 1;
  size_t k = 0;
  while (k < std::size(kKindOptions) && kKindOptions[k] != key) ++k;
  if (k == std::size(kKindOptions)) {
    return Error(l.number, t.column, "unknown kind option '" + std::string(key) + "'", kShape,
                 DidYouMean(key, kKindOptions, [](std::string_view s) { return s; }));
  }
  if (seen[k]) return Error(l.number, t.column, "option '" + std::string(key) + "' given twice", "", "keep one");
  seen[k] = true;
  if (value.empty()) {
    return Error(l.number, vcol, "missing value for '" + std::string(key) + "'", kShape, "no blanks around '='");
  }
  KindInfo& info = decl.info;
  switch (k) {
    case 0: {
      PW_ASSIGN_OR_RETURN(info.default_cost, Number(l, value, vcol, "cost"));
      if (info.default_cost < 0) {
        return Error(l.number, vcol, "cost " + std::string(value) + " is negative", "a time of 0 or more", "");
      }
      return Status::Ok();
    }
    case 1: {
      PW_ASSIGN_OR_RETURN(info.memory_delta_fraction, Number(l, value, vcol, "memory"));
      return Status::Ok();
    }
    case 2: {
      PW_ASSIGN_OR_RETURN(info.after, KindList(l, value, vcol, "after"));
      return Status::Ok();
    }
    case 3: {
      PW_ASSIGN_OR_RETURN(info.before, KindList(l, value, vcol, "before"));
      return Status::Ok();
    }
    case 4: {
      size_t begin = 0;
      while (true) {
        size_t end = value.find(',', begin);
        if (end == std::string_view::npos) end = value.size();
        Token piece{value.substr(begin, end - begin), vcol + static_cast<int>(begin), false, ""};
        PW_ASSIGN_OR_RETURN(int64_t s, Integer(l, piece, 0, std::numeric_limits<StageId>::max(), "a stage number",
                                               "stages=0,1 puts the kind on stages 0 and 1 only"));
        if (std::find(decl.stages.begin(), decl.stages.end(), s) != decl.stages.end()) {
          return Error(l.number, piece.column, "stage " + std::to_string(s) + " is listed twice", "", "keep one");
        }
        decl.stages.push_back(static_cast<StageId>(s));
        if (end == value.size()) return Status::Ok();
        begin = end + 1;
      }
    }
    case 5: {
      Token piece{value, vcol, false, ""};
      PW_ASSIGN_OR_RETURN(int64_t p, Integer(l, piece, -kMaxKindPriority, kMaxKindPriority, "a priority",
                                             "higher runs earlier among ready actions"));
      decl.priority = static_cast<int>(p);
      return Status::Ok();
    }
    default: {
      if (value != "yes" && value != "no") {
        return Error(l.number, vcol, "expected yes or no for microbatch, found '" + std::string(value) + "'",
                     "'microbatch=yes' or 'microbatch=no'",
                     "microbatch=no makes a kind written without a microbatch, like 0OPT");
      }
      info.has_microbatch = value == "yes";
      return Status::Ok();
    }
  }
}

Status PipeParser::ParseKind(const LexedLine& l) {
  if (l.tokens.size() < 2) return MissingValue(l, kKind, "a kind name in upper case, then options");
  const Token& name = l.tokens[1];
  KindDecl decl;
  decl.info.name = std::string(name.text);
  decl.loc = {l.number, name.column};
  bool seen[std::size(kKindOptions)] = {};
  for (size_t i = 2; i < l.tokens.size(); ++i) PW_RETURN_IF_ERROR(ParseKindOption(l, l.tokens[i], decl, seen));
  Result<ActionKind> id = kinds_.Register(decl.info);
  if (!id.ok()) {
    return Error(l.number, name.column, id.status().message(), "",
                 "kind lines look like '" + std::string(kDirectives[kKind].example) + "'");
  }
  program_.kinds.push_back(std::move(decl));
  return Status::Ok();
}

Status PipeParser::ParsePinned(const LexedLine& l) {
  constexpr std::string_view kExpected = "'rank <r>: <actions>' or 'rank <r> prefix: <actions>'";
  const std::string_view c = l.content;
  size_t i = static_cast<size_t>(l.tokens[0].column - 1) + 4;
  while (i < c.size() && IsBlank(c[i])) ++i;
  const size_t num_begin = i;
  while (i < c.size() && c[i] >= '0' && c[i] <= '9') ++i;
  if (i == num_begin) {
    return Error(l.number, static_cast<int>(num_begin) + 1, "expected a rank number after 'rank'", kExpected,
                 "e.g. 'rank 0: 0F0 0B0'");
  }
  const Token num{c.substr(num_begin, i - num_begin), static_cast<int>(num_begin) + 1, false, ""};
  PW_ASSIGN_OR_RETURN(int64_t rank, Integer(l, num, 0, kMaxRanks - 1, "a rank number", "ranks count from 0"));
  while (i < c.size() && IsBlank(c[i])) ++i;
  PinnedSequence seq;
  seq.loc = {l.number, l.tokens[0].column};
  if (c.substr(i).starts_with("prefix")) {
    seq.prefix_only = true;
    i += 6;
    while (i < c.size() && IsBlank(c[i])) ++i;
  }
  if (i >= c.size() || c[i] != ':') {
    return Error(l.number, static_cast<int>(i) + 1, "expected ':' after 'rank " + std::string(num.text) +
                     (seq.prefix_only ? " prefix'" : "'"),
                 kExpected, "the actions follow the ':'");
  }
  ++i;
  const auto r = static_cast<RankId>(rank);
  if (auto it = program_.pinned.find(r); it != program_.pinned.end()) {
    return Error(l.number, num.column,
                 "rank " + std::to_string(rank) + " is already pinned (line " + std::to_string(it->second.loc.line) + ")",
                 "one pinned line per rank", "merge the two lines");
  }
  while (i < c.size()) {
    while (i < c.size() && IsBlank(c[i])) ++i;
    const size_t begin = i;
    while (i < c.size() && !IsBlank(c[i])) ++i;
    if (i == begin) break;
    const std::string_view text = c.substr(begin, i - begin);
    const int column = static_cast<int>(begin) + 1;
    ActionTextError e;
    std::optional<Action> a = ParseActionText(text, kinds_, &e);
    if (!a) {
      std::string hint = e.hint;
      if (text == ".") hint = "pinned sequences hold actions only; the compiler leaves ranks idle as it must";
      return Error(l.number, column + e.column - 1, e.problem + " in '" + std::string(text) + "'",
                   "an action such as 0F0 or 1B3", hint);
    }
    seq.actions.push_back(*a);
    seq.action_locs.push_back({l.number, column});
  }
  pinned_rank_column_[r] = num.column;
  program_.pinned.emplace(r, std::move(seq));
  return Status::Ok();
}

Status PipeParser::Finish() {
  const int p = program_.ranks;
  const std::string ranks_said = line_of_[kRanks] != 0 ? "'ranks' is " + std::to_string(p) + " (line " +
                                                             std::to_string(line_of_[kRanks]) + ")"
                                                       : "the default 'ranks' is " + std::to_string(p);
  for (const auto& [rank, seq] : program_.pinned) {
    if (rank >= p) {
      return Error(seq.loc.line, pinned_rank_column_[rank], "rank " + std::to_string(rank) + " is out of range",
                   "a rank from 0 to " + std::to_string(p - 1), ranks_said);
    }
  }
  const PlacementSpec& pl = program_.placement;
  if (pl.style == PlacementStyle::kExplicit) {
    std::vector<bool> owns(static_cast<size_t>(p), false);
    for (size_t s = 0; s < pl.stage_to_rank.size(); ++s) {
      const RankId r = pl.stage_to_rank[s];
      if (r >= p) {
        return Error(pl.loc.line, placement_columns_[s],
                     "stage " + std::to_string(s) + " is placed on rank " + std::to_string(r) + ", out of range",
                     "a rank from 0 to " + std::to_string(p - 1), ranks_said);
      }
      owns[r] = true;
    }
    for (int r = 0; r < p; ++r) {
      if (!owns[r]) {
        return Error(pl.loc.line, pl.loc.column, "rank " + std::to_string(r) + " owns no stage",
                     "every rank from 0 to " + std::to_string(p - 1) + " in the list", ranks_said);
      }
    }
  }
  const bool split = program_.split_backward;
  const std::string backward_said = line_of_[kBackward] != 0
                                        ? "'backward' is " + std::string(split ? "split" : "fused") + " (line " +
                                              std::to_string(line_of_[kBackward]) + ")"
                                        : std::string("backward is fused unless 'backward split' is given");
  for (const auto& [kind, column] : priority_columns_) {
    if (!split && (kind == ActionKind::kBackwardInput || kind == ActionKind::kBackwardWeight)) {
      return Error(line_of_[kPriority], column,
                   std::string(kind == ActionKind::kBackwardInput ? "I" : "W") + " needs split backward, but " +
                       backward_said,
                   "B with fused backward", "add 'backward split', or write B");
    }
    if (split && kind == ActionKind::kBackward) {
      return Error(line_of_[kPriority], column, "B is the fused backward, but " + backward_said,
                   "I (input gradients) and W (weight gradients) with split backward",
                   "write 'I > F > W' or similar, or use 'backward fused'");
    }
  }
  if (program_.policy.max_deferred_w && !split) {
    return Error(line_of_[kDefer], column_of_[kDefer], "'defer W' needs split backward, but " + backward_said,
                 "'backward split' with 'defer W'", "add 'backward split' or remove the 'defer' line");
  }
  if (split && line_of_[kPriority] == 0) program_.policy.kind_priority = DefaultKindPriority(true);
  if (line_of_[kPriority] == 0) {
    for (Directive d : {kTraversal, kWarmup, kDefer}) {
      const int line = line_of_[d];
      if (line != 0 && (program_.policy.loc.line == 0 || line < program_.policy.loc.line)) {
        program_.policy.loc = {line, column_of_[d]};
      }
    }
  }
  return Status::Ok();
}

Result<PipeProgram> PipeParser::Run(std::string_view text) {
  if (text.size() > kMaxInputBytes) {
    return Error(1, 1, "the program is " + std::to_string(text.size()) + " bytes, too long",
                 "at most " + std::to_string(kMaxInputBytes) + " bytes", "a .pipe file describes a policy; pin less");
  }
  int number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++number;
    if (raw.size() > kMaxLineBytes) {
      return Error(number, 1, "line of " + std::to_string(raw.size()) + " bytes is too long",
                   "at most " + std::to_string(kMaxLineBytes) + " bytes per line", "");
    }
    PW_ASSIGN_OR_RETURN(LexedLine line, LexLine(source_, number, raw));
    if (line.tokens.empty()) continue;
    PW_RETURN_IF_ERROR(ParseLine(line));
  }
  PW_RETURN_IF_ERROR(Finish());
  return std::move(program_);
}

}  // namespace

Result<PipeProgram> ParsePipeProgram(std::string_view text, std::string_view source_name) {
  return PipeParser(source_name).Run(text);
}

Result<PipeProgram> LoadPipeFile(const std::string& path) {
  PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return ParsePipeProgram(text, path);
}

}  // namespace pw::dsl
