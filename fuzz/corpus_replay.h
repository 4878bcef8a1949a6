// The seed corpora of the fuzz targets (fuzz/corpus/<parser>/), for the gcc
// replay tests (*_fuzz_replay_test.cc) that run them through the targets'
// checks, so that builds without clang/libFuzzer still exercise them.
// Crashers a fuzz run finds are added to the corpus and stay covered.
// Test-only (no gtest here: the tests assert on what it returns).
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pw::fuzz {

// The repository root: from this file's path when the compiler gave an
// absolute one (CMake does), else the working directory (ctest runs there).
inline std::filesystem::path RepoRoot() {
  const std::filesystem::path here(__FILE__);
  if (here.is_absolute()) return here.parent_path().parent_path();
  return std::filesystem::current_path();
}

// The regular files of `dir` whose names end in `extension` ("" for all),
// sorted by path.
inline std::vector<std::filesystem::path> FilesIn(const std::filesystem::path& dir, std::string_view extension) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  for (const std::filesystem::directory_entry& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && (extension.empty() || e.path().extension() == extension)) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The bytes of `path`, as read in binary.
inline std::string FileBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every file of fuzz/corpus/<parser>/ with its bytes, sorted by name.
inline std::vector<std::pair<std::filesystem::path, std::string>> SeedCorpus(std::string_view parser) {
  std::vector<std::pair<std::filesystem::path, std::string>> out;
  for (const std::filesystem::path& f : FilesIn(RepoRoot() / "fuzz" / "corpus" / parser, "")) {
    out.emplace_back(f, FileBytes(f));
  }
  return out;
}

// What replaying one seed corpus found.
struct CorpusReplay {
  int files = 0;
  int accepted = 0;                   // files the parser accepts
  int refused = 0;                    // files it refuses (with an error)
  std::vector<std::string> problems;  // "<file>: <the check's problem>"
};

// Runs `check` (a fuzz target's check: "" or a problem) on every file of
// fuzz/corpus/<parser>/, and `accepts` (whether the parser takes the bytes)
// to count the valid seeds against the malformed ones.
template <class Check, class Accepts>
CorpusReplay ReplaySeedCorpus(std::string_view parser, Check check, Accepts accepts) {
  CorpusReplay out;
  for (const auto& [path, bytes] : SeedCorpus(parser)) {
    ++out.files;
    const std::string problem = check(bytes);
    if (!problem.empty()) out.problems.push_back(path.filename().string() + ": " + problem);
    (accepts(bytes) ? out.accepted : out.refused) += 1;
  }
  return out;
}

}  // namespace pw::fuzz
