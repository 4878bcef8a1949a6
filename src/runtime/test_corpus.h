// Test support: a deterministic English-like text file for the runtime's
// training tests, written once per test process and removed when it exits.
// Header-only and used by *_test.cc files only (not part of pw_runtime).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "os/process.h"

namespace pw::testing_support {

// Writes `bytes` or a little more of words drawn from `words` by a fixed
// LCG seeded with `seed` (a newline after about one word in
// `line_every`) to <tmp>/<name>_<pid>.txt and returns the path. The file is
// removed when the process exits (the ranks a test launches have ended by
// then). Not thread-safe; call it from a test's static initialiser.
inline std::string WriteWordCorpus(const std::string& name, const std::vector<std::string>& words, uint64_t seed,
                                   size_t bytes, int line_every) {
  std::string text;
  uint64_t x = seed;
  while (text.size() < bytes) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    text += words[(x >> 33) % words.size()];
    text += ((x >> 20) % line_every == 0) ? "\n" : " ";
  }
  const std::string path =
      (std::filesystem::temp_directory_path() / (name + "_" + std::to_string(ProcessId()) + ".txt")).string();
  std::ofstream(path) << text;
  static struct Remover {
    std::vector<std::string> paths;
    ~Remover() {
      std::error_code ec;
      for (const std::string& p : paths) std::filesystem::remove(p, ec);
    }
  } remover;
  remover.paths.push_back(path);
  return path;
}

}  // namespace pw::testing_support
