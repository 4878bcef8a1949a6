#include "core/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace pw {

Result<double> ParseByteSize(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a size; write bytes as a number with an optional unit, "
                                   "e.g. 1073741824, 8GiB, 512MB");
  };
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  double value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || !std::isfinite(value) || value < 0) return bad();
  std::string unit(ptr, s.data() + s.size());
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  struct Unit { const char* name; double scale; };
  static constexpr Unit kUnits[] = {
      {"", 1},          {"b", 1},           {"kb", 1e3},          {"mb", 1e6},
      {"gb", 1e9},      {"tb", 1e12},       {"kib", 1024.0},      {"mib", 1048576.0},
      {"gib", 1073741824.0}, {"tib", 1099511627776.0}, {"k", 1024.0}, {"m", 1048576.0},
      {"g", 1073741824.0},
  };
  for (const Unit& u : kUnits) {
    if (unit == u.name) return value * u.scale;
  }
  return bad();
}

std::string FormatBytes(double bytes) {
  static constexpr const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024 && i < 5) {
    v /= 1024;
    ++i;
  }
  char buf[32];
  if (i == 0) std::snprintf(buf, sizeof buf, "%.0f B", v);
  else std::snprintf(buf, sizeof buf, "%.3g %s", v, kNames[i]);
  return buf;
}

}  // namespace pw
