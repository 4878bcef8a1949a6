// Memory totals of this host, from /proc/meminfo, and this process's
// resident set (current and peak), from /proc/self/status.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/status.h"

namespace pw {

struct MemoryInfo {
  int64_t total_bytes = 0;      // MemTotal
  int64_t available_bytes = 0;  // MemAvailable (allocatable without swapping); MemFree
                                // on kernels without it
};

// Parses the text of /proc/meminfo ("MemTotal:  16314252 kB" lines).
// InvalidArgument when MemTotal is missing. Thread-safe.
Result<MemoryInfo> ParseMemInfo(std::string_view text);

// Reads /proc/meminfo. NotFound / IoError when it cannot be read (no /proc),
// InvalidArgument as ParseMemInfo. Blocks briefly;
// thread-safe.
Result<MemoryInfo> ReadMemoryInfo();

struct ResidentMemory {
  int64_t current_bytes = 0;  // VmRSS
  int64_t peak_bytes = 0;     // VmHWM: the most since start or the last ResetResidentPeak
  // Of current_bytes, the pages backed by files or shared memory (RssFile +
  // RssShmem): mostly shared libraries' code, shared by every process that
  // maps them. 0 on kernels before 4.5, which do not split VmRSS.
  int64_t file_bytes = 0;
  // The process's own memory now (current_bytes - file_bytes: RssAnon).
  int64_t anon_bytes() const { return current_bytes - file_bytes; }
  // The process's own memory at its peak, estimated as peak_bytes -
  // file_bytes: exact when no file-backed page was first touched after the
  // peak (code paths run late), else an underestimate by those pages.
  int64_t anon_peak_bytes() const { return peak_bytes - file_bytes; }
};

// Parses the text of /proc/<pid>/status. InvalidArgument when VmRSS or
// VmHWM is missing (kernel threads have neither). Thread-safe.
Result<ResidentMemory> ParseResidentMemory(std::string_view text);

// This process's resident memory. IoError when /proc cannot be read.
// Blocks briefly; thread-safe.
Result<ResidentMemory> ReadResidentMemory();

// Lowers this process's peak (VmHWM) to its current RSS, so that the next
// ReadResidentMemory reports the peak since this call (writes "5" to
// /proc/self/clear_refs; Linux >= 4.0). IoError when the kernel refuses.
// Cheap (no page walk); thread-safe.
Status ResetResidentPeak();

}  // namespace pw
