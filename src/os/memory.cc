#include "os/memory.h"

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "core/file_io.h"

namespace pw {
namespace {

// The value of "key: N kB" in bytes; nullopt when the key is absent.
std::optional<int64_t> FieldBytes(std::string_view text, std::string_view key) {
  size_t at = 0;
  while ((at = text.find(key, at)) != std::string_view::npos) {
    if ((at == 0 || text[at - 1] == '\n') && text.substr(at + key.size(), 1) == ":") break;
    at += key.size();
  }
  if (at == std::string_view::npos) return std::nullopt;
  size_t i = at + key.size() + 1;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  if (i >= text.size() || text[i] < '0' || text[i] > '9') return std::nullopt;
  int64_t value = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) value = value * 10 + (text[i] - '0');
  const bool kib = text.substr(i, 3) == " kB";
  return kib ? value * 1024 : value;
}

}  // namespace

Result<MemoryInfo> ParseMemInfo(std::string_view text) {
  const std::optional<int64_t> total = FieldBytes(text, "MemTotal");
  if (!total) return Status::InvalidArgument("/proc/meminfo has no MemTotal line");
  std::optional<int64_t> available = FieldBytes(text, "MemAvailable");
  if (!available) available = FieldBytes(text, "MemFree");  // kernels before 3.14
  return MemoryInfo{*total, available.value_or(0)};
}

Result<MemoryInfo> ReadMemoryInfo() {
  PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile("/proc/meminfo"));
  return ParseMemInfo(text);
}

Result<ResidentMemory> ParseResidentMemory(std::string_view text) {
  const std::optional<int64_t> rss = FieldBytes(text, "VmRSS");
  const std::optional<int64_t> hwm = FieldBytes(text, "VmHWM");
  if (!rss || !hwm) return Status::InvalidArgument("process status has no VmRSS or VmHWM line");
  const int64_t file = FieldBytes(text, "RssFile").value_or(0) + FieldBytes(text, "RssShmem").value_or(0);
  return ResidentMemory{*rss, *hwm, file};
}

Result<ResidentMemory> ReadResidentMemory() {
  PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile("/proc/self/status"));
  return ParseResidentMemory(text);
}

Status KeepFreedMemoryForReuse() {
  // glibc's ceiling for its own moving threshold on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX).
  constexpr int kMapAbove = 32 << 20;
  constexpr int kTrimAbove = 1 << 30;
  if (mallopt(M_MMAP_THRESHOLD, kMapAbove) != 1 || mallopt(M_TRIM_THRESHOLD, kTrimAbove) != 1) {
    return Status::Internal("glibc refused the malloc settings that keep freed memory for reuse "
                                 "(mallopt M_MMAP_THRESHOLD / M_TRIM_THRESHOLD)");
  }
  return Status::Ok();
}

Status ResetResidentPeak() {
  const int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError(std::string("/proc/self/clear_refs: ") + std::strerror(errno));
  const bool written = write(fd, "5", 1) == 1;
  const int saved = errno;
  close(fd);
  if (!written) return Status::IoError(std::string("resetting the peak RSS: ") + std::strerror(saved));
  return Status::Ok();
}

void ReturnFreedHeapToSystem() { ::malloc_trim(0); }

}  // namespace pw
