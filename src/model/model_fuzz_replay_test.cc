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

// Every seed passes the check, and the seeds hold valid files and
// malformed ones.
TEST(ModelFuzzReplayTest, SafetensorsCorpusPasses) {
  const CorpusReplay r = ReplaySeedCorpus("safetensors", SafetensorsProblem, [](std::string_view b) {
    return ParseSafetensorsHeader(b, "seed").ok();
  });
  EXPECT_EQ(r.problems, std::vector<std::string>{});
  EXPECT_GE(r.accepted, 2) << "under " << RepoRoot();
  EXPECT_GE(r.refused, 2);
}

TEST(ModelFuzzReplayTest, ManifestCorpusPasses) {
  const CorpusReplay r = ReplaySeedCorpus("checkpoint_manifest", CheckpointManifestProblem, [](std::string_view t) {
    return ParseCheckpointManifest(t, "seed").ok();
  });
  EXPECT_EQ(r.problems, std::vector<std::string>{});
  EXPECT_GE(r.accepted, 2) << "under " << RepoRoot();
  EXPECT_GE(r.refused, 2);
}

}  // namespace
}  // namespace pw::fuzz
