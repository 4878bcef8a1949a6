#include "comm/line_splitter.h"

#include <utility>

namespace pw {

LineSplitter::LineSplitter(std::string prefix, size_t max_line, int tail_lines)
    : prefix_(std::move(prefix)),
      max_line_(max_line == 0 ? 1 : max_line),
      tail_lines_(tail_lines < 0 ? 0 : static_cast<size_t>(tail_lines)) {}

void LineSplitter::Feed(std::string_view bytes, const Emit& emit) {
  while (!bytes.empty()) {
    size_t newline = bytes.find('\n');
    if (newline == std::string_view::npos) {
      partial_.append(bytes);
      while (partial_.size() >= max_line_) {
        EmitLine(std::string_view(partial_).substr(0, max_line_), emit);
        partial_.erase(0, max_line_);
      }
      return;
    }
    if (partial_.empty()) {
      EmitLine(bytes.substr(0, newline), emit);
    } else {
      partial_.append(bytes.substr(0, newline));
      EmitLine(partial_, emit);
      partial_.clear();
    }
    bytes.remove_prefix(newline + 1);
  }
}

void LineSplitter::Finish(const Emit& emit) {
  if (partial_.empty()) return;
  std::string line = std::move(partial_);
  partial_.clear();
  EmitLine(line, emit);
}

void LineSplitter::EmitLine(std::string_view line, const Emit& emit) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
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
