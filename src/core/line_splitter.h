// LineSplitter: turns a byte stream (one pipe of a child process) into whole
// lines, optionally prefixed ("[rank 2] "), and remembers the last few. The
// launcher (comm/launcher.h) has one per rank and stream, so partial writes
// from different ranks never interleave on one output line; a side task's
// output (harvest/task_output.h) is split by one before rate limiting.
//
// Overlong lines: with kSplit, an unfinished line that reaches max_line is
// emitted in pieces of max_line (nothing is lost, memory stays bounded; a
// line that arrives whole in one Feed is emitted whole); with kTruncate,
// every line is cut to its first max_line bytes and the rest dropped.
//
// Not thread-safe; one owner feeds it. Never blocks, never fails.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <string_view>

namespace pw {

enum class OverlongLine { kSplit, kTruncate };

struct LineSplitterOptions {
  std::string prefix;                // put before every emitted line
  size_t max_line = 64 * 1024;       // bytes of a line, without the prefix (0 counts as 1)
  OverlongLine overlong = OverlongLine::kSplit;
  bool strip_carriage_return = true; // "line\r\n" emits "line"
  int tail_lines = 0;                // the last lines kept (unprefixed) for tail()
};

class LineSplitter {
 public:
  using Emit = std::function<void(const std::string& prefixed_line)>;

  explicit LineSplitter(LineSplitterOptions options);

  // Appends bytes; emits every line completed by them ('\n' removed).
  void Feed(std::string_view bytes, const Emit& emit);
  // Emits the unfinished last line, if any (end of stream).
  void Finish(const Emit& emit);

  const std::deque<std::string>& tail() const { return tail_; }

 private:
  // Adds bytes of the current line to partial_ (kTruncate: what fits).
  void Append(std::string_view bytes);
  void EmitLine(std::string_view line, const Emit& emit);

  std::string prefix_;
  size_t max_line_;
  OverlongLine overlong_;
  bool strip_carriage_return_;
  size_t tail_lines_;
  std::string partial_;
  std::deque<std::string> tail_;
};

}  // namespace pw
