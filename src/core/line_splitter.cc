#include "core/line_splitter.h"

#include <algorithm>
#include <utility>

namespace pw {

LineSplitter::LineSplitter(LineSplitterOptions options)
    : prefix_(std::move(options.prefix)),
      max_line_(options.max_line == 0 ? 1 : options.max_line),
      overlong_(options.overlong),
      strip_carriage_return_(options.strip_carriage_return),
      tail_lines_(options.tail_lines < 0 ? 0 : static_cast<size_t>(options.tail_lines)) {}

void LineSplitter::Feed(std::string_view bytes, const Emit& emit) {
  while (!bytes.empty()) {
    // find is memchr: a flood of output must cost its reader little.
    const size_t newline = bytes.find('\n');
    if (newline == std::string_view::npos) {
      Append(bytes);
      while (overlong_ == OverlongLine::kSplit && partial_.size() >= max_line_) {
        EmitLine(std::string_view(partial_).substr(0, max_line_), emit);
        partial_.erase(0, max_line_);
      }
      return;
    }
    if (partial_.empty() && (overlong_ == OverlongLine::kSplit || newline <= max_line_)) {
      EmitLine(bytes.substr(0, newline), emit);
    } else {
      Append(bytes.substr(0, newline));
      EmitLine(partial_, emit);
      partial_.clear();
    }
    bytes.remove_prefix(newline + 1);
  }
}

void LineSplitter::Append(std::string_view bytes) {
  if (overlong_ == OverlongLine::kTruncate) {
    bytes = bytes.substr(0, max_line_ - std::min(max_line_, partial_.size()));  // the rest is dropped
  }
  partial_.append(bytes);
}

void LineSplitter::Finish(const Emit& emit) {
  if (partial_.empty()) return;
  std::string line = std::move(partial_);
  partial_.clear();
  EmitLine(line, emit);
}

void LineSplitter::EmitLine(std::string_view line, const Emit& emit) {
  if (strip_carriage_return_ && !line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (tail_lines_ > 0) {
    tail_.emplace_back(line);
    if (tail_.size() > tail_lines_) tail_.pop_front();
  }
  std::string out;
  out.reserve(prefix_.size() + line.size());
  out.append(prefix_).append(line);
  emit(out);
}

}  // namespace pw
