// ProcessStat: one process's line of /proc/<pid>/stat — its scheduler state,
// CPU time and resident memory — read without allocating (callers poll it in
// tight loops). ReadProcessGroupUsage sums them over a process group (a side
// task and every program it started).
#pragma once

#include <sys/types.h>

#include <cstdint>
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
  int64_t resident_bytes = 0;   // rss (field 24) x page size; 0 when the line stops before it

  // utime + stime + cutime + cstime.
  double cpu_seconds() const { return user_seconds + system_seconds + children_seconds; }
};

// Parses the text of /proc/<pid>/stat (the command name in parentheses may
// contain spaces and ')'); nullopt when malformed. Thread-safe.
std::optional<ProcessStat> ParseProcessStat(std::string_view text);

// Reads /proc/<pid>/stat. nullopt when the process is gone (or pid <= 0).
// Blocks for one small read; thread-safe; allocates nothing.
std::optional<ProcessStat> ReadProcessStat(pid_t pid);

// One process group's processes, summed: how many there are, how many are
// stopped ('T'/'t'), their resident and private memory and CPU time.
struct ProcessGroupUsage {
  int processes = 0;
  int stopped = 0;
  int64_t resident_bytes = 0;
  // Private_Clean + Private_Dirty of each process (smaps_rollup): what the
  // group itself holds. Resident counts pages shared copy-on-write with the
  // process that forked it too — a child between fork and exec shows all
  // of its parent's — so limits are checked against this.
  int64_t private_bytes = 0;
  double cpu_seconds = 0;
};

// Scans /proc for the processes whose pgrp is `pgid` (zombies count as
// processes, with no memory). Blocks for one read of /proc/<pid>/stat per
// process on the machine, and of smaps_rollup per member — about a
// millisecond with a few hundred — so callers poll it at a low rate. Thread-safe; allocates a directory stream.
ProcessGroupUsage ReadProcessGroupUsage(pid_t pgid);

}  // namespace pw
