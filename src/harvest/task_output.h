// TaskOutput: a side task's stdout and stderr, captured through a pipe so a
// task that floods its output can neither flood the job's log nor stall the
// rank. The task writes into the pipe; the harvest manager's thread drains
// it without blocking, forwards whole lines to a sink at a bounded rate
// (a token bucket: `burst_lines`, then `lines_per_second`), counts what it
// held back, and keeps the last lines for the failure report. A task that
// writes faster than the pipe drains blocks in write(2) — its own problem,
// never training's.
//
// Thread-safety: Drain and the accessors from one thread (the manager's);
// write_fd() is handed to Spawn before the task starts.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "core/line_splitter.h"
#include "core/status.h"
#include "os/unique_fd.h"

namespace pw {

struct TaskOutputOptions {
  double lines_per_second = 20;
  double burst_lines = 50;
  int tail_lines = 10;           // kept for failure reports
  size_t max_line_bytes = 400;   // longer lines are cut (and marked) when forwarded
  size_t max_drain_bytes = 1 << 16;  // per Drain call: bounds the manager's time on a flood
                                     // (the writer waits; 64 KiB per 20 ms poll is 3.2 MB/s)
};

struct TaskOutputStats {
  int64_t bytes = 0;             // everything read from the task
  int64_t lines = 0;             // complete lines among them
  int64_t lines_forwarded = 0;
  int64_t lines_held_back = 0;   // over the rate: counted, not forwarded
};

class TaskOutput {
 public:
  using Sink = std::function<void(const std::string& line)>;

  // Makes the pipe. IoError when the system has no descriptors left.
  static Result<std::unique_ptr<TaskOutput>> Create(TaskOutputOptions options, Sink sink);
  ~TaskOutput();
  TaskOutput(const TaskOutput&) = delete;
  TaskOutput& operator=(const TaskOutput&) = delete;

  // The pipe's write end, for the child's fds 1 and 2. Close it in this
  // process after the spawn (CloseWriteEnd) so EOF arrives when the task
  // and its children are gone.
  int write_fd() const { return write_fd_.get(); }
  void CloseWriteEnd();

  // Reads what is there (at most max_drain_bytes), forwards lines within the
  // rate, and at `final` also the unterminated rest. Never blocks.
  void Drain(int64_t now_ns, bool final = false);

  const TaskOutputStats& stats() const { return stats_; }
  // The last tail_lines lines (forwarded or not), oldest first.
  const std::deque<std::string>& tail() const { return tail_; }

 private:
  TaskOutput(TaskOutputOptions options, Sink sink, UniqueFd read_fd, UniqueFd write_fd);
  void Line(std::string line, int64_t now_ns);

  TaskOutputOptions options_;
  Sink sink_;
  UniqueFd read_fd_, write_fd_;
  // Lines cut to max_line_bytes (kTruncate), bytes kept as written ('\r').
  LineSplitter splitter_;
  std::deque<std::string> tail_;
  double tokens_;
  int64_t refilled_ns_ = 0;
  int64_t held_back_reported_ = 0;
  TaskOutputStats stats_;
};

}  // namespace pw
