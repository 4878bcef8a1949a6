#include "model/toml_text.h"

#include <gtest/gtest.h>

#include <string>

namespace pw {
namespace {

std::string ErrorOf(const std::string& text) {
  Result<toml::table> t = ParseTomlText(text, "m.toml");
  return t.ok() ? "" : t.status().message();
}

// Where toml++ 3.3 never asks whether a character is whitespace, any
// character is fine: comments and value strings (paths, names).
TEST(TomlTextTest, NonAsciiInCommentsAndValueStringsParses) {
  Result<toml::table> t = ParseTomlText(
      "# caf\xc3\xa9 \xc2\xa7\n[train]\ndata = \"/home/jos\xc3\xa9/corpus.txt\"  # \xc3\xa9\n"
      "side_task = [\"\xc3\xa9\", '\xc2\xa7']\nx = {a = \"\xc3\xa9\"}\ns = \"\"\"\n\xc3\xa9\\\n  a\"\"\"\n",
      "m.toml");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->at_path("train.data").value_or(std::string()), "/home/jos\xc3\xa9/corpus.txt");
}

// The fuzz target found toml++ 3.3 reaching __builtin_unreachable on such
// characters elsewhere; they are refused first, saying where.
TEST(TomlTextTest, RefusesWhatToml33CannotClassify) {
  EXPECT_EQ(ErrorOf("[model]\nn_layers = tr\xc2\xa7" "e\n"),
            "m.toml:2:14: unexpected character U+00A7 ('\xc2\xa7') outside a string or comment; quote text "
            "(\"...\") or write it in a comment (# ...)");
  EXPECT_EQ(ErrorOf("[model]\n\"cl\xc3\xa9\" = 1\n").rfind("m.toml:2:4: character U+00E9 ('\xc3\xa9') in a quoted key", 0),
            0u);
  EXPECT_NE(ErrorOf("[\"\xc3\xa9\"]\n").find("in a quoted key"), std::string::npos);
  EXPECT_NE(ErrorOf("x = {\"\xc3\xa9\" = 1}\n").find("in a quoted key"), std::string::npos);
  EXPECT_NE(ErrorOf("a.\"\xc3\xa9\" = 1\n").find("in a quoted key"), std::string::npos);
  EXPECT_NE(ErrorOf("s = \"\"\"\\\n  \xc2\xa7\"\"\"\n").find("right after a backslash in a multi-line string"),
            std::string::npos);
  // A quote inside a bare value opens no string: toml++ reads on to the 'é'.
  EXPECT_NE(ErrorOf("x = 6x7f\"\"\"f\xc3\xa9\"\"\"\n").find("outside a string or comment"), std::string::npos);
  // U+3000 and U+1680 are whitespace to toml++ (no undefined behaviour):
  // its own error, not this check's.
  EXPECT_NE(ErrorOf("\xe3\x80\x80x = 1\n").find("TOML syntax error"), std::string::npos);
}

TEST(TomlTextTest, SyntaxErrorsStayOnOneLine) {
  const std::string message = ErrorOf("[model]\nbias = tr\nx = 1\n");
  EXPECT_EQ(message.rfind("m.toml:2:", 0), 0u) << message;
  EXPECT_NE(message.find("TOML syntax error"), std::string::npos);
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

}  // namespace
}  // namespace pw
