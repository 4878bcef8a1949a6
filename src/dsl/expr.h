// Expr: small integer expressions over a pipeline's shape, used by the
// schedule language for per-rank quantities (warm-up counts, memory caps,
// W deferral), e.g. "p - r - 1", "2*(p - r) - 1", "min(m, p - r)".
//
// Grammar: integers, variables p (ranks), r (this rank), m (microbatches),
// v (stages per rank), S (stages); + - * / % (integer division, C rounding),
// unary minus, parentheses, min(a, b), max(a, b). Immutable; cheap to copy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace pw::dsl {

struct ExprVars {
  int64_t p = 1, r = 0, m = 1, v = 1, S = 1;
};

class Expr {
 public:
  Expr() = default;  // the constant 0

  // A constant.
  static Expr Constant(int64_t value);

  // Parses `text`. Errors give the 1-based column within `text`, what was
  // expected and a hint, as "col 5: expected a number, variable or '(' ...".
  static Result<Expr> Parse(std::string_view text);

  // As Parse, but an error's message has no "col N: " prefix: the 1-based
  // column within `text` goes to *error_column instead (set only on error),
  // for callers that place it within a larger text.
  static Result<Expr> ParseAt(std::string_view text, int* error_column);

  // Evaluates for one rank. Fails on division by zero or overflow.
  Result<int64_t> Evaluate(const ExprVars& vars) const;

  // The canonical text (fully parenthesised only where needed), so that
  // Parse(e.ToString()) evaluates like e.
  std::string ToString() const;

  struct Node;

 private:
  explicit Expr(std::shared_ptr<const Node> root) : root_(std::move(root)) {}
  std::shared_ptr<const Node> root_;
};

}  // namespace pw::dsl
