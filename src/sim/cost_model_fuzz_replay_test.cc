// Replays the seed corpus of the cost-model JSON fuzz target
// (fuzz/corpus/cost_model_json/) through its own check
// (fuzz/corpus_replay.h says why).
#define PW_FUZZ_REPLAY
#include "../../fuzz/cost_model_json_fuzz.cc"

#include <gtest/gtest.h>

#include "../../fuzz/corpus_replay.h"

namespace pw::fuzz {
namespace {

TEST(CostModelFuzzReplayTest, SeedCorpusPasses) {
  const auto corpus = SeedCorpus("cost_model_json");
  int parsed = 0, refused = 0;
  for (const auto& [path, text] : corpus) {
    EXPECT_EQ(CostModelJsonProblem(text), "") << path;
    (ParseCostFileJson(text, "seed").ok() ? parsed : refused) += 1;
  }
  // The seeds hold valid cost files and malformed ones.
  EXPECT_GE(parsed, 2) << "under " << RepoRoot();
  EXPECT_GE(refused, 2);
}

}  // namespace
}  // namespace pw::fuzz
