// Replays the seed corpus of the cost-model JSON fuzz target
// (fuzz/corpus/cost_model_json/) through its own check
// (fuzz/corpus_replay.h says why).
#define PW_FUZZ_REPLAY
#include "../../fuzz/cost_model_json_fuzz.cc"

#include <gtest/gtest.h>

#include "../../fuzz/corpus_replay.h"

namespace pw::fuzz {
namespace {

// Every seed passes the check, and the seeds hold valid cost files and
// malformed ones.
TEST(CostModelFuzzReplayTest, SeedCorpusPasses) {
  const CorpusReplay r = ReplaySeedCorpus("cost_model_json", CostModelJsonProblem,
                                          [](std::string_view t) { return ParseCostFileJson(t, "seed").ok(); });
  EXPECT_EQ(r.problems, std::vector<std::string>{});
  EXPECT_GE(r.accepted, 2) << "under " << RepoRoot();
  EXPECT_GE(r.refused, 2);
}

}  // namespace
}  // namespace pw::fuzz
