// Action text: one action in PyTorch's notation (torch.distributed.pipelining
// _Action): "<stage><KIND><microbatch>", e.g. "2F0", "3I1", "1SEND_F3", or
// "<stage><KIND>" for kinds without a microbatch ("0REDUCE_GRAD", "0OPT").
// KIND is [A-Z_]+ looked up in a KindRegistry, so user kinds parse too. "B"
// is full backward, as PyTorch's FULL_BACKWARD writes it.
//
// The schedule text format (text_format.h) and the compute-only CSV
// (csv_format.h) both build on these two functions; they turn an
// ActionTextError into messages that carry file:line:col.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "schedule/action.h"
#include "schedule/kind_registry.h"

namespace pw {

// Why a piece of text is not an action, and where in it.
struct ActionTextError {
  int column = 1;        // 1-based column within the action's text
  std::string problem;   // e.g. "expected a stage number", "unknown action kind 'X'"
  std::string hint;      // how to fix it, e.g. "actions look like 2F0"
};

// Parses exactly `text` (no surrounding blanks; callers split tokens) as one
// action of a kind in `kinds`. Stage and microbatch are only checked to be
// non-negative integers that fit StageId / MicrobatchId; ranges against a
// schedule are the caller's business. The idle kind has no text here (the
// formats write it as '.' or an empty cell), so "0IDLE" is rejected.
// Pure; safe to call concurrently. On failure returns nullopt and fills
// `*error` when `error` is not null.
std::optional<Action> ParseActionText(std::string_view text, const KindRegistry& kinds,
                                      ActionTextError* error);

// ParseActionText with the error as an InvalidArgument status, e.g.
// "expected a stage number at column 1 of 'F0'; actions look like 2F0".
Result<Action> ParseAction(std::string_view text, const KindRegistry& kinds);

// The one-line message for an error in `text`, as ParseAction reports it.
std::string DescribeActionTextError(const ActionTextError& error, std::string_view text);

// The text of `a`, e.g. "2F0", "0REDUCE_GRAD"; "" for an idle step. The kind
// must be registered in `kinds` (PW_CHECK). Inverse of ParseActionText for
// every non-idle action with non-negative stage and microbatch.
std::string FormatAction(const Action& a, const KindRegistry& kinds);

// The canonical idle step that the parsers produce for '.' and empty cells.
inline constexpr Action kIdleAction{0, kNoMicrobatch, ActionKind::kIdle};

}  // namespace pw
