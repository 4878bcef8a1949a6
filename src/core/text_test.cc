#include "core/text.h"

#include <gtest/gtest.h>

namespace pw {
namespace {

TEST(TextTest, TrimsWhitespace) {
  EXPECT_EQ(TrimSpaces("  a b\t\n"), "a b");
  EXPECT_EQ(TrimSpaces(" \t "), "");
}

TEST(TextTest, EditDistanceCountsSingleCharacterEdits) {
  EXPECT_EQ(EditDistance("microbatchs", "microbatches"), 1u);
  EXPECT_EQ(EditDistance("d_modle", "d_model"), 2u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("same", "same"), 0u);
}

}  // namespace
}  // namespace pw

namespace pw {
namespace {

TEST(ExactDoubleTest, RoundTripsWhereToStringWouldNot) {
  for (double x : {5e-7, 1.2, 0.1, 3e-4, 1e300, -2.5e-12, 0.0}) {
    EXPECT_EQ(std::stod(ExactDouble(x)), x) << ExactDouble(x);
  }
}

// A quoted name must not break a message's line: a fuzzed CSV cell holding
// a line break printed its message on two lines.
TEST(PrintableTextTest, EscapesControlBytesAndKeepsTheRest) {
  EXPECT_EQ(PrintableText("0F\n0"), "0F\\n0");
  EXPECT_EQ(PrintableText(std::string("a\r\tb\x01\x7f", 6)), "a\\r\\tb\\x01\\x7f");
  EXPECT_EQ(PrintableText(std::string("\0", 1)), "\\x00");
  EXPECT_EQ(PrintableText("caf\xc3\xa9 2F0"), "caf\xc3\xa9 2F0");
}

}  // namespace
}  // namespace pw
