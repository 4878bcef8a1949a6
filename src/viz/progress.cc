#include "viz/progress.h"

#include <algorithm>
#include <cmath>

#include "os/fd_io.h"

namespace pw {

std::string FormatEta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long long s = std::llround(seconds);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld", s / 60, s % 60);
  }
  return buf;
}

std::string FormatRate(double per_s) {
  if (!std::isfinite(per_s) || per_s < 0) per_s = 0;
  char buf[32];
  if (per_s < 999.5) {
    std::snprintf(buf, sizeof(buf), "%.0f", per_s);
  } else if (per_s < 999.5e3) {
    std::snprintf(buf, sizeof(buf), "%.1fk", per_s / 1e3);
  } else if (per_s < 999.5e6) {
    std::snprintf(buf, sizeof(buf), "%.2fM", per_s / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2fG", per_s / 1e9);
  }
  return buf;
}

std::string FormatProgress(const ProgressInfo& info) {
  const int64_t total = std::max<int64_t>(info.total, 0);
  const int64_t step = std::clamp<int64_t>(info.step, 0, total);
  const double fraction = total > 0 ? static_cast<double>(step) / static_cast<double>(total) : 1.0;
  const int filled = static_cast<int>(fraction * kProgressBarWidth);
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < kProgressBarWidth) {
    bar += '>';
    bar.append(static_cast<size_t>(kProgressBarWidth - filled - 1), ' ');
  }
  const int64_t done = step - std::clamp<int64_t>(info.first_step, 0, step);
  const double eta = done > 0 ? info.elapsed_s / static_cast<double>(done) * static_cast<double>(total - step)
                              : -1;
  char loss[32] = "";
  if (info.show_loss) std::snprintf(loss, sizeof(loss), " loss %.2f", info.loss);
  return info.label + " " + std::to_string(step) + "/" + std::to_string(total) +
         (info.unit.empty() ? "" : " " + info.unit) + " [" + bar + "] " +
         std::to_string(static_cast<int>(fraction * 100)) + "%" + loss + " " + FormatRate(info.tokens_per_s) +
         " tok/s ETA " + FormatEta(eta) + (info.note.empty() ? "" : " (" + info.note + ")");
}

bool IsTerminal(std::FILE* stream) { return IsTerminalStream(stream); }

void ProgressPrinter::DrawInPlace(std::string_view line) {
  std::fprintf(stream_, "\r%.*s\x1b[K", static_cast<int>(line.size()), line.data());
  std::fflush(stream_);
  open_line_ = true;
}

void ProgressPrinter::Update(const ProgressInfo& info) {
  if (mode_ == ProgressMode::kPlain) return;
  const std::string line = FormatProgress(info);
  if (mode_ == ProgressMode::kInPlace) {
    DrawInPlace(line);
    return;
  }
  std::fprintf(stream_, "%.*s%s\n", static_cast<int>(kProgressRelayPrefix.size()),
               kProgressRelayPrefix.data(), line.c_str());
  std::fflush(stream_);
}

void ProgressPrinter::Message(const std::string& line) {
  Finish();
  std::fprintf(stream_, "%s\n", line.c_str());
  std::fflush(stream_);
}

void ProgressPrinter::RelayLine(const std::string& line, std::FILE* other) {
  std::string_view rest(line);
  if (rest.rfind("[rank ", 0) == 0) {
    const size_t close = rest.find("] ");
    if (close != std::string_view::npos) rest.remove_prefix(close + 2);
  }
  if (rest.rfind(kProgressRelayPrefix, 0) == 0) {
    rest.remove_prefix(kProgressRelayPrefix.size());
    DrawInPlace(rest);
    return;
  }
  Finish();
  std::fprintf(other, "%s\n", line.c_str());
  std::fflush(other);
}

void ProgressPrinter::Finish() {
  if (!open_line_) return;
  std::fprintf(stream_, "\n");
  std::fflush(stream_);
  open_line_ = false;
}

}  // namespace pw
