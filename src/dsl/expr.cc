#include "dsl/expr.h"

#include <cctype>
#include <limits>
#include <vector>

namespace pw::dsl {

struct Expr::Node {
  enum class Op { kConst, kVar, kNeg, kAdd, kSub, kMul, kDiv, kMod, kMin, kMax };
  Op op = Op::kConst;
  int64_t value = 0;  // kConst
  char var = 0;       // kVar: p r m v S
  std::shared_ptr<const Node> a, b;
};

namespace {

using Node = Expr::Node;
using NodePtr = std::shared_ptr<const Node>;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<NodePtr> ParseAll() {
    PW_ASSIGN_OR_RETURN(NodePtr e, ParseSum());
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected '" + std::string(1, text_[pos_]) + "'", "an operator (+ - * / %) or the end");
    return e;
  }

  // The column of the last error (1-based), kept apart from its message.
  int error_column() const { return error_column_; }

 private:
  Status Error(const std::string& what, const std::string& expected) const {
    error_column_ = static_cast<int>(pos_) + 1;
    return Status::InvalidArgument(what + "; expected " + expected +
                                   " (expressions use integers, p r m v S, + - * / %, min(a,b), max(a,b))");
  }
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  static NodePtr Make(Node::Op op, NodePtr a, NodePtr b = nullptr) {
    auto n = std::make_shared<Node>();
    n->op = op;
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
  }

  Result<NodePtr> ParseSum() {
    PW_ASSIGN_OR_RETURN(NodePtr left, ParseProduct());
    while (true) {
      if (Eat('+')) {
        PW_ASSIGN_OR_RETURN(NodePtr right, ParseProduct());
        left = Make(Node::Op::kAdd, left, right);
      } else if (Eat('-')) {
        PW_ASSIGN_OR_RETURN(NodePtr right, ParseProduct());
        left = Make(Node::Op::kSub, left, right);
      } else {
        return left;
      }
    }
  }

  Result<NodePtr> ParseProduct() {
    PW_ASSIGN_OR_RETURN(NodePtr left, ParseUnary());
    while (true) {
      Node::Op op;
      if (Eat('*')) op = Node::Op::kMul;
      else if (Eat('/')) op = Node::Op::kDiv;
      else if (Eat('%')) op = Node::Op::kMod;
      else return left;
      PW_ASSIGN_OR_RETURN(NodePtr right, ParseUnary());
      left = Make(op, left, right);
    }
  }

  Result<NodePtr> ParseUnary() {
    if (Eat('-')) {
      if (++depth_ > kMaxDepth) return Error("expression nests too deeply", "a simpler expression");
      PW_ASSIGN_OR_RETURN(NodePtr inner, ParseUnary());
      --depth_;
      return Make(Node::Op::kNeg, inner);
    }
    return ParseAtom();
  }

  Result<NodePtr> ParseAtom() {
    SkipSpace();
    if (pos_ >= text_.size()) return Error("the expression ends too early", "a number, variable or '('");
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      if (++depth_ > kMaxDepth) return Error("expression nests too deeply", "a simpler expression");
      PW_ASSIGN_OR_RETURN(NodePtr inner, ParseSum());
      --depth_;
      if (!Eat(')')) return Error("missing ')'", "')'");
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        const int digit = text_[pos_] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) return Error("number too large", "a smaller number");
        v = v * 10 + digit;
        ++pos_;
      }
      auto n = std::make_shared<Node>();
      n->value = v;
      return NodePtr(n);
    }
    if (std::isalpha(static_cast<unsigned char>(c))) {
      const size_t start = pos_;
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
      const std::string_view word = text_.substr(start, pos_ - start);
      if (word == "min" || word == "max") {
        if (!Eat('(')) return Error("'" + std::string(word) + "' needs arguments", "'(' as in min(a, b)");
        if (++depth_ > kMaxDepth) return Error("expression nests too deeply", "a simpler expression");
        PW_ASSIGN_OR_RETURN(NodePtr a, ParseSum());
        if (!Eat(',')) return Error("'" + std::string(word) + "' takes two arguments", "','");
        PW_ASSIGN_OR_RETURN(NodePtr b, ParseSum());
        if (!Eat(')')) return Error("missing ')'", "')'");
        --depth_;
        return Make(word == "min" ? Node::Op::kMin : Node::Op::kMax, a, b);
      }
      if (word.size() == 1 && std::string_view("prmvS").find(word[0]) != std::string_view::npos) {
        auto n = std::make_shared<Node>();
        n->op = Node::Op::kVar;
        n->var = word[0];
        return NodePtr(n);
      }
      pos_ = start;
      return Error("unknown name '" + std::string(word) + "'",
                   "p (ranks), r (this rank), m (microbatches), v (stages per rank), S (stages), min or max");
    }
    return Error("unexpected '" + std::string(1, c) + "'", "a number, variable or '('");
  }

  static constexpr int kMaxDepth = 64;
  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
  mutable int error_column_ = 0;
};

Result<int64_t> Eval(const Node& n, const ExprVars& vars) {
  using Op = Node::Op;
  switch (n.op) {
    case Op::kConst: return n.value;
    case Op::kVar:
      switch (n.var) {
        case 'p': return vars.p;
        case 'r': return vars.r;
        case 'm': return vars.m;
        case 'v': return vars.v;
        default: return vars.S;
      }
    case Op::kNeg: {
      PW_ASSIGN_OR_RETURN(int64_t a, Eval(*n.a, vars));
      if (a == std::numeric_limits<int64_t>::min()) return Status::InvalidArgument("overflow in negation");
      return -a;
    }
    default: break;
  }
  PW_ASSIGN_OR_RETURN(int64_t a, Eval(*n.a, vars));
  PW_ASSIGN_OR_RETURN(int64_t b, Eval(*n.b, vars));
  int64_t out = 0;
  switch (n.op) {
    case Op::kAdd:
      if (__builtin_add_overflow(a, b, &out)) return Status::InvalidArgument("overflow in '+'");
      return out;
    case Op::kSub:
      if (__builtin_sub_overflow(a, b, &out)) return Status::InvalidArgument("overflow in '-'");
      return out;
    case Op::kMul:
      if (__builtin_mul_overflow(a, b, &out)) return Status::InvalidArgument("overflow in '*'");
      return out;
    case Op::kDiv:
    case Op::kMod:
      if (b == 0) return Status::InvalidArgument("division by zero");
      if (a == std::numeric_limits<int64_t>::min() && b == -1) return Status::InvalidArgument("overflow in '/'");
      return n.op == Op::kDiv ? a / b : a % b;
    case Op::kMin: return std::min(a, b);
    case Op::kMax: return std::max(a, b);
    default: return Status::Internal("bad expression node");
  }
}

int Precedence(Node::Op op) {
  using Op = Node::Op;
  switch (op) {
    case Op::kAdd:
    case Op::kSub: return 1;
    case Op::kMul:
    case Op::kDiv:
    case Op::kMod: return 2;
    case Op::kNeg: return 3;
    default: return 4;
  }
}

std::string Print(const Node& n) {
  using Op = Node::Op;
  auto wrap = [](const Node& child, int min_prec) {
    std::string s = Print(child);
    return Precedence(child.op) < min_prec ? "(" + s + ")" : s;
  };
  switch (n.op) {
    case Op::kConst: return std::to_string(n.value);
    case Op::kVar: return std::string(1, n.var);
    case Op::kNeg: return "-" + wrap(*n.a, 3);
    case Op::kMin: return "min(" + Print(*n.a) + ", " + Print(*n.b) + ")";
    case Op::kMax: return "max(" + Print(*n.a) + ", " + Print(*n.b) + ")";
    default: break;
  }
  const char* sym = n.op == Op::kAdd ? " + " : n.op == Op::kSub ? " - " : n.op == Op::kMul ? "*" : n.op == Op::kDiv ? "/" : " % ";
  const int prec = Precedence(n.op);
  // Left-associative: the right operand needs parentheses at equal precedence.
  return wrap(*n.a, prec) + sym + wrap(*n.b, prec + 1);
}

}  // namespace

Expr Expr::Constant(int64_t value) {
  auto n = std::make_shared<Node>();
  n->value = value;
  return Expr(n);
}

Result<Expr> Expr::ParseAt(std::string_view text, int* error_column) {
  Parser parser(text);
  Result<NodePtr> root = parser.ParseAll();
  if (!root.ok()) {
    *error_column = parser.error_column();
    return root.status();
  }
  return Expr(*root);
}

Result<Expr> Expr::Parse(std::string_view text) {
  int column = 0;
  Result<Expr> e = ParseAt(text, &column);
  if (!e.ok()) return Status(e.status().code(), "col " + std::to_string(column) + ": " + e.status().message());
  return e;
}

Result<int64_t> Expr::Evaluate(const ExprVars& vars) const {
  if (!root_) return int64_t{0};
  return Eval(*root_, vars);
}

std::string Expr::ToString() const { return root_ ? Print(*root_) : "0"; }

}  // namespace pw::dsl
