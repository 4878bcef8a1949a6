#include "schedule/action_text.h"

#include <charconv>
#include <cstdint>
#include <limits>

#include "core/text.h"

namespace pw {
namespace {

constexpr std::string_view kShapeHint = "actions look like 2F0, 1SEND_F3 or 0REDUCE_GRAD";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsKindChar(char c) { return (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsLower(char c) { return c >= 'a' && c <= 'z'; }

// Shows one offending character readably in a message.
std::string Quote(char c) {
  if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
    static constexpr char kHex[] = "0123456789abcdef";
    const auto u = static_cast<unsigned char>(c);
    return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 15];
  }
  return std::string("'") + c + "'";
}

// Every kind a user may write, for "unknown kind" hints. IDLE is left out:
// idle steps are not written as actions.
std::string KnownKinds(const KindRegistry& kinds) {
  std::string out;
  for (int id = 0; id < kNumBuiltinKinds; ++id) {
    auto k = static_cast<ActionKind>(id);
    if (k == ActionKind::kIdle) continue;
    if (!out.empty()) out += ' ';
    out += kinds.Name(k);
  }
  for (ActionKind k : kinds.UserKinds()) {
    out += ' ';
    out += kinds.Name(k);
  }
  return out;
}

// Reads the digits starting at text[pos] into an int32; returns false on
// overflow. `pos` moves past the digits.
bool ReadNumber(std::string_view text, size_t& pos, int32_t& value) {
  const size_t begin = pos;
  while (pos < text.size() && IsDigit(text[pos])) ++pos;
  auto [ptr, ec] = std::from_chars(text.data() + begin, text.data() + pos, value);
  return ec == std::errc() && ptr == text.data() + pos;
}

std::optional<Action> Fail(ActionTextError* error, size_t index, std::string problem, std::string hint) {
  if (error != nullptr) {
    error->column = static_cast<int>(index) + 1;
    error->problem = std::move(problem);
    error->hint = std::move(hint);
  }
  return std::nullopt;
}

}  // namespace

std::optional<Action> ParseActionText(std::string_view text, const KindRegistry& kinds,
                                      ActionTextError* error) {
  if (text.empty()) return Fail(error, 0, "expected an action, found nothing", std::string(kShapeHint));
  size_t pos = 0;
  // Stage.
  if (!IsDigit(text[0])) {
    std::string hint(kShapeHint);
    if (text[0] == '-') hint = "stage numbers are never negative; " + hint;
    if (IsKindChar(text[0])) hint = "put the stage number first; " + hint;
    return Fail(error, 0, "expected a stage number, found " + Quote(text[0]), std::move(hint));
  }
  Action a;
  if (!ReadNumber(text, pos, a.stage)) {
    return Fail(error, 0, "stage number '" + std::string(text.substr(0, pos)) + "' is too large",
                "stages are numbered from 0 and fit in 31 bits");
  }
  // Kind.
  const size_t kind_begin = pos;
  while (pos < text.size() && IsKindChar(text[pos])) ++pos;
  if (pos == kind_begin) {
    if (pos == text.size()) {
      return Fail(error, pos, "expected an action kind after the stage number, found the end",
                  "known kinds: " + KnownKinds(kinds) + "; " + std::string(kShapeHint));
    }
    std::string hint = "known kinds: " + KnownKinds(kinds);
    if (IsLower(text[pos])) hint = "kinds are upper case; " + hint;
    return Fail(error, pos, "expected an action kind, found " + Quote(text[pos]), std::move(hint));
  }
  const std::string_view name = text.substr(kind_begin, pos - kind_begin);
  std::optional<ActionKind> kind = kinds.Find(name);
  if (!kind || *kind == ActionKind::kIdle) {
    std::string hint = "known kinds: " + KnownKinds(kinds);
    if (kind) hint = "write an idle step as '.' in the text format or an empty cell in CSV";
    if (pos < text.size() && IsLower(text[pos])) hint = "kinds are upper case; " + hint;
    return Fail(error, kind_begin, "unknown action kind '" + std::string(name) + "'", std::move(hint));
  }
  a.kind = *kind;
  const KindInfo& info = kinds.Info(a.kind);
  // Microbatch.
  const size_t mb_begin = pos;
  if (info.has_microbatch) {
    if (pos == text.size() || !IsDigit(text[pos])) {
      const std::string example = std::to_string(a.stage) + std::string(name) + "0";
      return Fail(error, pos,
                  "expected a microbatch number" +
                      (pos == text.size() ? std::string(", found the end") : ", found " + Quote(text[pos])),
                  std::string(name) + " actions take one, e.g. " + example);
    }
    if (!ReadNumber(text, pos, a.microbatch)) {
      return Fail(error, mb_begin, "microbatch number '" + std::string(text.substr(mb_begin, pos - mb_begin)) +
                                       "' is too large",
                  "microbatches are numbered from 0 and fit in 31 bits");
    }
  } else {
    a.microbatch = kNoMicrobatch;
    if (pos < text.size() && IsDigit(text[pos])) {
      return Fail(error, pos, std::string(name) + " takes no microbatch, found " + Quote(text[pos]),
                  "write it as " + std::to_string(a.stage) + std::string(name));
    }
  }
  if (pos != text.size()) {
    return Fail(error, pos, "unexpected " + Quote(text[pos]) + " after the action",
                "separate actions with blanks (text format) or commas (CSV); " + std::string(kShapeHint));
  }
  return a;
}

std::string DescribeActionTextError(const ActionTextError& error, std::string_view text) {
  std::string msg = error.problem + " at column " + std::to_string(error.column) + " of '" +
                    PrintableText(text) + "'";
  if (!error.hint.empty()) msg += "; " + error.hint;
  return msg;
}

Result<Action> ParseAction(std::string_view text, const KindRegistry& kinds) {
  ActionTextError error;
  std::optional<Action> a = ParseActionText(text, kinds, &error);
  if (!a) return Status::InvalidArgument(DescribeActionTextError(error, text));
  return *a;
}

std::string FormatAction(const Action& a, const KindRegistry& kinds) {
  if (a.kind == ActionKind::kIdle) return "";
  std::string s = std::to_string(a.stage);
  s += kinds.Name(a.kind);
  if (kinds.Info(a.kind).has_microbatch) s += std::to_string(a.microbatch);
  return s;
}

}  // namespace pw
