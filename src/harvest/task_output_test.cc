// TaskOutput: lines forwarded within the rate, the rest counted and noted,
// long lines cut, the tail kept, a final unterminated line not lost.
#include "harvest/task_output.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace pw {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

void WriteAll(int fd, const std::string& text) {
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
}

TEST(TaskOutputTest, ABurstIsForwardedAndTheRestHeldBackThenNoted) {
  std::vector<std::string> seen;
  TaskOutputOptions options;
  options.burst_lines = 3;
  options.lines_per_second = 1;
  auto output = TaskOutput::Create(options, [&](const std::string& line) { seen.push_back(line); });
  ASSERT_TRUE(output.ok()) << output.status().ToString();
  TaskOutput& out = **output;
  WriteAll(out.write_fd(), "a\nb\nc\nd\ne\n");
  out.Drain(kSecond);
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(out.stats().lines, 5);
  EXPECT_EQ(out.stats().lines_held_back, 2);
  EXPECT_EQ(out.stats().bytes, 10);

  // Two seconds later two tokens are back: the note of what was held back
  // comes before the next forwarded line.
  WriteAll(out.write_fd(), "f\n");
  out.Drain(3 * kSecond);
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[3], "... 2 lines held back (output rate limit)");
  EXPECT_EQ(seen[4], "f");
  EXPECT_EQ(out.stats().lines_forwarded, 4);
  EXPECT_EQ(out.tail().back(), "f");
}

TEST(TaskOutputTest, LongLinesAreCutAndAnUnterminatedLastLineArrivesAtTheEnd) {
  std::vector<std::string> seen;
  TaskOutputOptions options;
  options.max_line_bytes = 8;
  auto output = TaskOutput::Create(options, [&](const std::string& line) { seen.push_back(line); });
  ASSERT_TRUE(output.ok());
  TaskOutput& out = **output;
  WriteAll(out.write_fd(), std::string(100, 'x') + "\nlast");
  out.CloseWriteEnd();
  out.Drain(kSecond);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], "xxxxxxxx [cut]");
  out.Drain(kSecond, /*final=*/true);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], "last");
  EXPECT_EQ(out.stats().bytes, 105);
}

TEST(TaskOutputTest, TheTailKeepsTheLastLinesEvenWhenHeldBack) {
  TaskOutputOptions options;
  options.burst_lines = 1;
  options.lines_per_second = 0;
  options.tail_lines = 2;
  auto output = TaskOutput::Create(options, nullptr);
  ASSERT_TRUE(output.ok());
  TaskOutput& out = **output;
  WriteAll(out.write_fd(), "1\n2\n3\n4\n");
  out.Drain(kSecond);
  EXPECT_EQ(out.stats().lines_held_back, 3);
  ASSERT_EQ(out.tail().size(), 2u);
  EXPECT_EQ(out.tail().front(), "3");
  EXPECT_EQ(out.tail().back(), "4");
}

}  // namespace
}  // namespace pw
