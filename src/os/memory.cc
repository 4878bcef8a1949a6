#include "os/memory.h"

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
  while (i < text.size() && text[i] == ' ') ++i;
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

}  // namespace pw
