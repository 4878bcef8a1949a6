// ProcessStat: one process's line of /proc/<pid>/stat — its scheduler state
// and CPU time — read without allocating (callers poll it in tight loops).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string_view>

namespace pw {

struct ProcessStat {
  char state = 0;        // 'R' running, 'S' sleeping, 'T' stopped, 'Z' zombie, ...
  pid_t ppid = 0;
  pid_t pgrp = 0;
  double user_seconds = 0;      // utime
  double system_seconds = 0;    // stime
  double children_seconds = 0;  // cutime + cstime (waited-for children)

  // utime + stime + cutime + cstime.
  double cpu_seconds() const { return user_seconds + system_seconds + children_seconds; }
};

// Parses the text of /proc/<pid>/stat (the command name in parentheses may
// contain spaces and ')'); nullopt when malformed. Thread-safe.
std::optional<ProcessStat> ParseProcessStat(std::string_view text);

// Reads /proc/<pid>/stat. nullopt when the process is gone (or pid <= 0).
// Blocks for one small read; thread-safe; allocates nothing.
std::optional<ProcessStat> ReadProcessStat(pid_t pid);

}  // namespace pw
