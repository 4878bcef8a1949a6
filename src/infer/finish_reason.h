// Why a generated sequence ended: the result files' "finish_reason", as an
// enum inside the engine and the writers, named only when written.
#pragma once

#include <string_view>

namespace pw {

enum class FinishReason {
  kNone,     // still generating
  kLength,   // max_tokens generated
  kEnd,      // a stop id (EOS), or a structured-output match nothing may extend
  kContext,  // the model's context (seq_len) is full
  kError,    // the request failed alone; its error says why
};

// "length", "end", "context", "error" ("" for kNone).
constexpr std::string_view FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone: return "";
    case FinishReason::kLength: return "length";
    case FinishReason::kEnd: return "end";
    case FinishReason::kContext: return "context";
    case FinishReason::kError: return "error";
  }
  return "";
}

}  // namespace pw
