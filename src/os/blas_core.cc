#include "os/blas_core.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace pw {
namespace {

bool Has(const std::vector<std::string>& flags, std::string_view flag) {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

}  // namespace

std::string BetterBlasCoreType(std::string_view current, const std::vector<std::string>& cpu_flags) {
  std::string core(current);
  std::transform(core.begin(), core.end(), core.begin(), [](unsigned char c) { return std::tolower(c); });
  static const char* const kGeneric[] = {"prescott", "core2",   "penryn",  "dunnington", "nehalem", "atom",
                                         "katmai",   "coppermine", "northwood", "banias", "sandybridge",
                                         "bulldozer", "piledriver", "steamroller", "excavator", "opteron",
                                         "barcelona"};
  if (std::find(std::begin(kGeneric), std::end(kGeneric), core) == std::end(kGeneric)) return "";
  bool avx512 = true;
  for (const char* f : {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}) avx512 = avx512 && Has(cpu_flags, f);
  if (avx512) return "SkylakeX";
  if (Has(cpu_flags, "avx2") && Has(cpu_flags, "fma")) return "Haswell";
  return "";
}

std::vector<std::string> CpuFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    std::istringstream words(line.substr(colon + 1));
    std::vector<std::string> flags;
    for (std::string w; words >> w;) flags.push_back(w);
    return flags;
  }
  return {};
}

std::string LoadedBlasCoreName() {
  using CoreName = char* (*)();
  auto corename = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  if (corename == nullptr) return "";
  const char* name = corename();
  return name != nullptr ? name : "";
}

}  // namespace pw
