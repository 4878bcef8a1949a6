// LineSplitter: turns the byte stream of one pipe into whole lines with a
// prefix ("[rank 2] "), and remembers the last few lines. The launcher
// (comm/launcher.h) has one per rank and stream, so partial writes from
// different ranks never interleave on one output line.
//
// Not thread-safe; one owner feeds it.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <string_view>

namespace pw {

class LineSplitter {
 public:
  using Emit = std::function<void(const std::string& prefixed_line)>;

  // A line longer than `max_line` bytes is emitted in pieces of that size;
  // the last `tail_lines` lines (unprefixed) are kept for tail().
  LineSplitter(std::string prefix, size_t max_line = 64 * 1024, int tail_lines = 0);

  // Appends bytes; emits every line completed by them ('\n' removed, a
  // trailing '\r' too).
  void Feed(std::string_view bytes, const Emit& emit);
  // Emits the unfinished last line, if any (end of stream).
  void Finish(const Emit& emit);

  const std::deque<std::string>& tail() const { return tail_; }

 private:
  void EmitLine(std::string_view line, const Emit& emit);

  std::string prefix_;
  size_t max_line_;
  size_t tail_lines_;
  std::string partial_;
  std::deque<std::string> tail_;
};

}  // namespace pw
