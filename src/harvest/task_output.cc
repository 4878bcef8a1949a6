#include "harvest/task_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pw {

Result<std::unique_ptr<TaskOutput>> TaskOutput::Create(TaskOutputOptions options, Sink sink) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return Status::IoError(std::string("side-task output: pipe failed: ") + std::strerror(errno));
  }
  // Only the read end is non-blocking: a flooding task must wait, not spin.
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return std::unique_ptr<TaskOutput>(new TaskOutput(options, std::move(sink), fds[0], fds[1]));
}

TaskOutput::TaskOutput(TaskOutputOptions options, Sink sink, int read_fd, int write_fd)
    : options_(options), sink_(std::move(sink)), read_fd_(read_fd), write_fd_(write_fd),
      tokens_(options.burst_lines) {}

TaskOutput::~TaskOutput() {
  CloseWriteEnd();
  if (read_fd_ >= 0) close(read_fd_);
}

void TaskOutput::CloseWriteEnd() {
  if (write_fd_ >= 0) close(write_fd_);
  write_fd_ = -1;
}

void TaskOutput::Drain(int64_t now_ns, bool final) {
  char buffer[1 << 14];
  size_t drained = 0;
  while (read_fd_ >= 0 && drained < options_.max_drain_bytes) {
    const ssize_t n = read(read_fd_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // empty (EAGAIN) or EOF
    drained += static_cast<size_t>(n);
    stats_.bytes += n;
    // memchr, not a loop per byte: this runs on the manager's thread, on
    // the rank's core, and a flood must cost it little.
    for (const char *at = buffer, *end = buffer + n; at < end;) {
      const char* newline = static_cast<const char*>(std::memchr(at, '\n', static_cast<size_t>(end - at)));
      const char* stop = newline != nullptr ? newline : end;
      const size_t room = options_.max_line_bytes - std::min(options_.max_line_bytes, partial_.size());
      partial_.append(at, std::min(room, static_cast<size_t>(stop - at)));  // an overlong line's rest is dropped
      if (newline == nullptr) break;
      Line(std::move(partial_), now_ns);
      partial_.clear();
      at = newline + 1;
    }
  }
  if (final && !partial_.empty()) {
    Line(std::move(partial_), now_ns);
    partial_.clear();
  }
}

void TaskOutput::Line(std::string line, int64_t now_ns) {
  ++stats_.lines;
  if (line.size() >= options_.max_line_bytes) line += " [cut]";
  tail_.push_back(line);
  while (tail_.size() > static_cast<size_t>(std::max(0, options_.tail_lines))) tail_.pop_front();
  if (refilled_ns_ > 0) {
    tokens_ = std::min(options_.burst_lines,
                       tokens_ + options_.lines_per_second * static_cast<double>(now_ns - refilled_ns_) * 1e-9);
  }
  refilled_ns_ = now_ns;
  if (tokens_ < 1) {
    ++stats_.lines_held_back;
    return;
  }
  tokens_ -= 1;
  if (!sink_) return;
  if (stats_.lines_held_back > held_back_reported_) {
    sink_("... " + std::to_string(stats_.lines_held_back - held_back_reported_) +
          " lines held back (output rate limit)");
    held_back_reported_ = stats_.lines_held_back;
  }
  ++stats_.lines_forwarded;
  sink_(line);
}

}  // namespace pw
