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

// Makes glibc's malloc keep the memory that large frees return, for the
// process's next allocations, instead of giving it back to the kernel and
// faulting it in again (a zeroed page per 4 KiB) on the next use. Training
// frees and re-allocates the same activations and gradients every
// microbatch; by default glibc maps buffers above a threshold it moves with
// what was freed (at most 32 MiB) and trims the heap's top above twice that,
// so a rank took a page fault per 4 KiB of many of its tensors in every
// step (the split backward, which keeps more alive between actions, about
// 40 % more than the fused one). After this call buffers up to 32 MiB come
// from the heap and up to 1 GiB of free heap top is kept: the process's
// resident peak is what its busiest moment needs, as before, and later
// steps reuse it. Call once, early, before threads allocate. Internal
// when glibc refuses a setting. Not thread-safe against concurrent malloc
// tuning.
Status KeepFreedMemoryForReuse();

// Gives the heap's free memory back to the kernel (malloc_trim): after a
// large one-off release (loading's buffers, a dropped weight cache) that
// glibc would otherwise keep resident where the memory plan counts on it.
void ReturnFreedHeapToSystem();

// Lowers this process's peak (VmHWM) to its current RSS, so that the next
// ReadResidentMemory reports the peak since this call (writes "5" to
// /proc/self/clear_refs; Linux >= 4.0). IoError when the kernel refuses.
// Cheap (no page walk); thread-safe.
Status ResetResidentPeak();

}  // namespace pw
