// Replays the seed corpora of the safetensors header and checkpoint
// manifest fuzz targets (fuzz/corpus/safetensors/,
// fuzz/corpus/checkpoint_manifest/) through the targets' own checks
// (fuzz/corpus_replay.h says why).
#define PW_FUZZ_REPLAY
#include "../../fuzz/checkpoint_manifest_fuzz.cc"
#include "../../fuzz/safetensors_fuzz.cc"

#include <gtest/gtest.h>

#include "../../fuzz/corpus_replay.h"

namespace pw::fuzz {
namespace {

TEST(ModelFuzzReplayTest, SafetensorsCorpusPasses) {
  const auto corpus = SeedCorpus("safetensors");
  int parsed = 0, refused = 0;
  for (const auto& [path, bytes] : corpus) {
    EXPECT_EQ(SafetensorsProblem(bytes), "") << path;
    (ParseSafetensorsHeader(bytes, "seed").ok() ? parsed : refused) += 1;
  }
  // The seeds hold valid files and malformed ones.
  EXPECT_GE(parsed, 2) << "under " << RepoRoot();
  EXPECT_GE(refused, 2);
}

TEST(ModelFuzzReplayTest, ManifestCorpusPasses) {
  const auto corpus = SeedCorpus("checkpoint_manifest");
  int parsed = 0, refused = 0;
  for (const auto& [path, text] : corpus) {
    EXPECT_EQ(CheckpointManifestProblem(text), "") << path;
    (ParseCheckpointManifest(text, "seed").ok() ? parsed : refused) += 1;
  }
  EXPECT_GE(parsed, 2) << "under " << RepoRoot();
  EXPECT_GE(refused, 2);
}

}  // namespace
}  // namespace pw::fuzz
