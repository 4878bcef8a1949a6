// LineSplitter: partial writes joined, prefixes, \r\n, the tail, and both
// rules for overlong lines.
#include "core/line_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pw {
namespace {

TEST(LineSplitter, JoinsPartialWritesAndPrefixes) {
  LineSplitter splitter({.prefix = "[rank 1] ", .max_line = 1024, .tail_lines = 2});
  std::vector<std::string> lines;
  auto emit = [&](const std::string& line) { lines.push_back(line); };
  splitter.Feed("hel", emit);
  EXPECT_TRUE(lines.empty());
  splitter.Feed("lo\nwor", emit);
  splitter.Feed("ld\r\n\nlast", emit);
  splitter.Finish(emit);
  EXPECT_EQ(lines, (std::vector<std::string>{"[rank 1] hello", "[rank 1] world", "[rank 1] ",
                                             "[rank 1] last"}));
  EXPECT_EQ(std::vector<std::string>(splitter.tail().begin(), splitter.tail().end()),
            (std::vector<std::string>{"", "last"}));
  splitter.Finish(emit);  // nothing pending: no empty line
  EXPECT_EQ(lines.size(), 4u);
}

TEST(LineSplitter, CutsOverlongLines) {
  LineSplitter splitter({.prefix = "> ", .max_line = 4});
  std::vector<std::string> lines;
  auto emit = [&](const std::string& line) { lines.push_back(line); };
  splitter.Feed("abcdefghij", emit);
  splitter.Finish(emit);
  EXPECT_EQ(lines, (std::vector<std::string>{"> abcd", "> efgh", "> ij"}));
}

TEST(LineSplitter, TruncatesOverlongLinesAndKeepsCarriageReturnsWhenAsked) {
  LineSplitter splitter({.max_line = 4, .overlong = OverlongLine::kTruncate, .strip_carriage_return = false});
  std::vector<std::string> lines;
  auto emit = [&](const std::string& line) { lines.push_back(line); };
  splitter.Feed("abcdefghij\nxy\r\nlong", emit);
  splitter.Feed("er\n1234\nend", emit);
  splitter.Finish(emit);
  EXPECT_EQ(lines, (std::vector<std::string>{"abcd", "xy\r", "long", "1234", "end"}));
}

}  // namespace
}  // namespace pw
