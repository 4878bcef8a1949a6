// Replays the seed corpus of the TOML config fuzz target
// (fuzz/corpus/toml_config/) and the bundled model files (examples/*.toml)
// through its own check (fuzz/corpus_replay.h says why).
#define PW_FUZZ_REPLAY
#include "../../fuzz/toml_config_fuzz.cc"

#include <gtest/gtest.h>

#include "../../fuzz/corpus_replay.h"

namespace pw::fuzz {
namespace {

TEST(TomlConfigFuzzReplayTest, SeedCorpusPasses) {
  const auto corpus = SeedCorpus("toml_config");
  int parsed = 0, refused = 0;
  for (const auto& [path, text] : corpus) {
    EXPECT_EQ(TomlConfigProblem(text), "") << path;
    (ParseModelConfig(text, "seed").ok() ? parsed : refused) += 1;
  }
  // The seeds hold valid configs and malformed ones.
  EXPECT_GE(parsed, 2) << "under " << RepoRoot();
  EXPECT_GE(refused, 2);
}

TEST(TomlConfigFuzzReplayTest, BundledModelFilesPass) {
  const auto files = FilesIn(RepoRoot() / "examples", ".toml");
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    const std::string text = FileBytes(f);
    EXPECT_TRUE(ParseModelConfig(text, f.string()).ok()) << f;
    EXPECT_EQ(TomlConfigProblem(text), "") << f;
  }
}

}  // namespace
}  // namespace pw::fuzz
