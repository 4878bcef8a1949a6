// Replays the fuzzer's seed corpus (fuzz/corpus/*) and the example programs
// (examples/schedules/*.pipe) through the fuzz target's own check, so that
// builds without clang/libFuzzer still run it. Crashers the fuzzer finds are
// added to fuzz/corpus/ and stay covered here.
#include "../../fuzz/pipe_parser_fuzz.cc"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/file_io.h"

namespace pw::dsl {
namespace {

namespace fs = std::filesystem;

// The repository root: from this file's path when the compiler gave an
// absolute one (CMake does), else the working directory (ctest runs there).
fs::path RepoRoot() {
  const fs::path here(__FILE__);
  if (here.is_absolute()) return here.parent_path().parent_path().parent_path();
  return fs::current_path();
}

std::vector<fs::path> FilesIn(const fs::path& dir, std::string_view extension) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && (extension.empty() || e.path().extension() == extension)) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ParserFuzzReplayTest, SeedCorpusPasses) {
  const std::vector<fs::path> files = FilesIn(RepoRoot() / "fuzz" / "corpus", "");
  ASSERT_FALSE(files.empty()) << "no fuzz/corpus under " << RepoRoot();
  int parsed = 0;
  for (const fs::path& f : files) {
    Result<std::string> text = ReadTextFile(f.string());
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    EXPECT_EQ(PipeParserRoundTripProblem(*text), "") << f;
    parsed += ParsePipeProgram(*text, f.string()).ok();
  }
  // The seeds hold valid programs, not only errors.
  EXPECT_GE(parsed, 5);
}

TEST(ParserFuzzReplayTest, ExampleProgramsParseAndRoundTrip) {
  for (const fs::path& f : FilesIn(RepoRoot() / "examples" / "schedules", ".pipe")) {
    Result<PipeProgram> p = LoadPipeFile(f.string());
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    Result<std::string> text = ReadTextFile(f.string());
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(PipeParserRoundTripProblem(*text), "") << f;
  }
}

}  // namespace
}  // namespace pw::dsl
