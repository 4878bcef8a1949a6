#include "os/process_stats.h"

#include <dirent.h>
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
  // 14 utime, 15 stime, 16 cutime, 17 cstime; then, when present, 24 rss.
  long long values[25] = {};
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
  for (int i = 18; i <= 24; ++i) {
    std::optional<long long> value = Number(NextField(rest));
    if (!value) break;  // older or shortened lines: no rss
    values[i] = *value;
  }
  static const long kPageBytes = sysconf(_SC_PAGESIZE);
  stat.resident_bytes = std::max<long long>(0, values[24]) * kPageBytes;
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

namespace {

// Private_Clean + Private_Dirty of /proc/<pid>/smaps_rollup (kB lines);
// 0 when it cannot be read (the process is gone, or a kernel before 4.14).
int64_t PrivateBytes(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", static_cast<int>(pid));
  FILE* file = std::fopen(path, "re");
  if (file == nullptr) return 0;
  int64_t bytes = 0;
  char line[256];
  while (std::fgets(line, sizeof(line), file) != nullptr) {
    long long kib = 0;
    if (std::sscanf(line, "Private_Clean: %lld kB", &kib) == 1 || std::sscanf(line, "Private_Dirty: %lld kB", &kib) == 1) {
      bytes += kib * 1024;
    }
  }
  std::fclose(file);
  return bytes;
}

}  // namespace

ProcessGroupUsage ReadProcessGroupUsage(pid_t pgid) {
  ProcessGroupUsage usage;
  if (pgid <= 0) return usage;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return usage;
  while (const dirent* entry = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;  // not a process directory
    std::optional<ProcessStat> stat = ReadProcessStat(static_cast<pid_t>(pid));
    if (!stat || stat->pgrp != pgid) continue;
    ++usage.processes;
    if (stat->state == 'T' || stat->state == 't') ++usage.stopped;
    usage.resident_bytes += stat->resident_bytes;
    usage.private_bytes += PrivateBytes(static_cast<pid_t>(pid));
    usage.cpu_seconds += stat->user_seconds + stat->system_seconds;
  }
  closedir(proc);
  return usage;
}

}  // namespace pw
