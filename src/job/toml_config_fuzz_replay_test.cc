// Replays the seed corpus of the TOML config fuzz target
// (fuzz/corpus/toml_config/) and the bundled model files (examples/*.toml)
// through its own check (fuzz/corpus_replay.h says why).
#define PW_FUZZ_REPLAY
#include "../../fuzz/toml_config_fuzz.cc"

#include <gtest/gtest.h>

#include "../../fuzz/corpus_replay.h"

namespace pw::fuzz {
namespace {

// Every seed passes the check, and the seeds hold valid configs and
// malformed ones.
TEST(TomlConfigFuzzReplayTest, SeedCorpusPasses) {
  const CorpusReplay r = ReplaySeedCorpus("toml_config", TomlConfigProblem,
                                          [](std::string_view t) { return ParseModelConfig(t, "seed").ok(); });
  EXPECT_EQ(r.problems, std::vector<std::string>{});
  EXPECT_GE(r.accepted, 2) << "under " << RepoRoot();
  EXPECT_GE(r.refused, 2);
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
