#include "os/process_stats.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace pw {
namespace {

// The next space-separated field of `rest` (advanced past it).
std::string_view NextField(std::string_view& rest) {
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  const size_t end = std::min(rest.find(' '), rest.size());
  std::string_view field = rest.substr(0, end);
  rest.remove_prefix(end);
  return field;
}

// A decimal integer field; nullopt when it is not one.
std::optional<long long> Number(std::string_view field) {
  if (field.empty()) return std::nullopt;
  long long value = 0;
  bool negative = field.front() == '-';
  if (negative) field.remove_prefix(1);
  if (field.empty()) return std::nullopt;
  for (char c : field) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return negative ? -value : value;
}

}  // namespace

std::optional<ProcessStat> ParseProcessStat(std::string_view text) {
  const size_t paren = text.rfind(')');  // the command name may contain ") "
  if (paren == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(paren + 1);
  // Fields after the name, numbered as in proc(5): 3 state, 4 ppid, 5 pgrp,
  // 14 utime, 15 stime, 16 cutime, 17 cstime.
  long long values[18] = {};
  ProcessStat stat;
  for (int i = 3; i <= 17; ++i) {
    std::string_view field = NextField(rest);
    if (field.empty()) return std::nullopt;
    if (i == 3) {
      stat.state = field.front();
      continue;
    }
    std::optional<long long> value = Number(field);
    if (!value) return std::nullopt;
    values[i] = *value;
  }
  static const double kTicksPerSecond = static_cast<double>(sysconf(_SC_CLK_TCK));
  stat.ppid = static_cast<pid_t>(values[4]);
  stat.pgrp = static_cast<pid_t>(values[5]);
  stat.user_seconds = static_cast<double>(values[14]) / kTicksPerSecond;
  stat.system_seconds = static_cast<double>(values[15]) / kTicksPerSecond;
  stat.children_seconds = static_cast<double>(values[16] + values[17]) / kTicksPerSecond;
  return stat;
}

std::optional<ProcessStat> ReadProcessStat(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  char path[64], buffer[1024];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) < 0 && errno == EINTR) {
  }
  close(fd);
  if (n <= 0) return std::nullopt;
  return ParseProcessStat(std::string_view(buffer, static_cast<size_t>(n)));
}

}  // namespace pw
