// Memory totals of this host, from /proc/meminfo.
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

}  // namespace pw
