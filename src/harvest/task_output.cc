#include "harvest/task_output.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "os/fd_io.h"
#include "os/pipe.h"

namespace pw {

Result<std::unique_ptr<TaskOutput>> TaskOutput::Create(TaskOutputOptions options, Sink sink) {
  Result<Pipe> pipe = Pipe::Create("a side task's output");
  if (!pipe.ok()) return Status::IoError("side-task output: " + pipe.status().message());
  // Only the read end is non-blocking: a flooding task must wait, not spin.
  SetNonBlocking(pipe->read_end.get());
  return std::unique_ptr<TaskOutput>(
      new TaskOutput(options, std::move(sink), std::move(pipe->read_end), std::move(pipe->write_end)));
}

TaskOutput::TaskOutput(TaskOutputOptions options, Sink sink, UniqueFd read_fd, UniqueFd write_fd)
    : options_(options), sink_(std::move(sink)), read_fd_(std::move(read_fd)), write_fd_(std::move(write_fd)),
      splitter_({.max_line = options.max_line_bytes,
                 .overlong = OverlongLine::kTruncate,
                 .strip_carriage_return = false}),
      tokens_(options.burst_lines) {}

TaskOutput::~TaskOutput() = default;

void TaskOutput::CloseWriteEnd() { write_fd_.Reset(); }

void TaskOutput::Drain(int64_t now_ns, bool final) {
  const LineSplitter::Emit line = [&](const std::string& text) { Line(text, now_ns); };
  char buffer[1 << 14];
  size_t drained = 0;
  while (read_fd_.valid() && drained < options_.max_drain_bytes) {
    const ReadChunk chunk = ReadSome(read_fd_.get(), buffer, sizeof(buffer));
    if (chunk.state != ReadChunk::kData) break;  // empty (EAGAIN), EOF or an error
    drained += chunk.bytes;
    stats_.bytes += static_cast<int64_t>(chunk.bytes);
    splitter_.Feed(std::string_view(buffer, chunk.bytes), line);
  }
  if (final) splitter_.Finish(line);
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
