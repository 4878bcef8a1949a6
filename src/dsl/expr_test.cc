#include "dsl/expr.h"

#include <gtest/gtest.h>

namespace pw::dsl {
namespace {

int64_t Eval(const char* text, ExprVars vars) {
  Result<Expr> e = Expr::Parse(text);
  EXPECT_TRUE(e.ok()) << text << ": " << e.status().ToString();
  Result<int64_t> v = e->Evaluate(vars);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return *v;
}

TEST(ExprTest, EvaluatesPerRankExpressions) {
  ExprVars vars{.p = 4, .r = 1, .m = 8, .v = 2, .S = 8};
  EXPECT_EQ(Eval("p - r - 1", vars), 2);
  EXPECT_EQ(Eval("2*(p - r) - 1", vars), 5);
  EXPECT_EQ(Eval("min(m, p - r)", vars), 3);
  EXPECT_EQ(Eval("max(0, r - p)", vars), 0);
  EXPECT_EQ(Eval("(v - 1)*p + 2*(p - r - 1)", vars), 8);
  EXPECT_EQ(Eval("-r + 10 % 4 / 2", vars), 0);
  EXPECT_EQ(Eval("S", vars), 8);
}

TEST(ExprTest, PrintsSoThatParsingAgainGivesTheSameValues) {
  for (const char* text : {"p - (r - 1)", "p - r - 1", "2*(p - r) - 1", "-(p + r)", "min(m, p - r)*2",
                           "m / (p / 2)", "p % (r + 1)"}) {
    Result<Expr> e = Expr::Parse(text);
    ASSERT_TRUE(e.ok()) << text;
    Result<Expr> again = Expr::Parse(e->ToString());
    ASSERT_TRUE(again.ok()) << e->ToString();
    for (int64_t r = 0; r < 4; ++r) {
      ExprVars vars{.p = 4, .r = r, .m = 8, .v = 1, .S = 4};
      EXPECT_EQ(*e->Evaluate(vars), *again->Evaluate(vars)) << text << " -> " << e->ToString();
    }
  }
  EXPECT_EQ(Expr::Parse("p-(r-1)")->ToString(), "p - (r - 1)");
}

TEST(ExprTest, ErrorsGiveColumnAndHint) {
  struct Case { const char* text; const char* expect; };
  for (const Case& c : {Case{"p -", "col 4"}, Case{"p + q", "unknown name 'q'"}, Case{"(p", "missing ')'"},
                        Case{"min(p)", "two arguments"}, Case{"p r", "unexpected 'r'"}, Case{"", "ends too early"},
                        Case{"99999999999999999999", "too large"}, Case{"p $ 2", "unexpected '$'"}}) {
    Result<Expr> e = Expr::Parse(c.text);
    ASSERT_FALSE(e.ok()) << c.text;
    EXPECT_NE(e.status().message().find(c.expect), std::string::npos) << c.text << ": " << e.status().message();
  }
  // ParseAt keeps the column out of the message, for callers that place it.
  int column = 0;
  Result<Expr> at = Expr::ParseAt("p + q", &column);
  ASSERT_FALSE(at.ok());
  EXPECT_EQ(column, 5);
  EXPECT_EQ(at.status().message().rfind("unknown name 'q'", 0), 0u) << at.status().message();
  EXPECT_EQ(Expr::Parse("p + q").status().message(), "col 5: " + at.status().message());
  EXPECT_FALSE(Expr::Parse("p / (r - r)")->Evaluate({}).ok());
  EXPECT_FALSE(Expr::Parse(std::string(200, '(') + "1" + std::string(200, ')')).ok());
  EXPECT_FALSE(Expr::Parse(std::string(200, '-') + "1").ok());
  EXPECT_FALSE(Expr::Parse("9223372036854775807 + 1")->Evaluate({}).ok());
}

}  // namespace
}  // namespace pw::dsl
