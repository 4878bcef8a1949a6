// Replays the seed corpus of the prompts JSONL fuzz target
// (fuzz/corpus/prompts_jsonl/) and examples/prompts.jsonl through its own
// check (fuzz/corpus_replay.h says why).
#define PW_FUZZ_REPLAY
#include "../../fuzz/prompts_jsonl_fuzz.cc"

#include <gtest/gtest.h>

#include "../../fuzz/corpus_replay.h"

namespace pw::fuzz {
namespace {

// Every seed passes the check, and the seeds hold clean files and files
// with malformed lines.
TEST(PromptsFuzzReplayTest, SeedCorpusPasses) {
  const CorpusReplay r = ReplaySeedCorpus("prompts_jsonl", PromptsJsonlProblem, [](std::string_view t) {
    return ParsePrompts(t, "seed").problems.empty();
  });
  EXPECT_EQ(r.problems, std::vector<std::string>{});
  EXPECT_GE(r.accepted, 1) << "under " << RepoRoot();
  EXPECT_GE(r.refused, 2);
}

TEST(PromptsFuzzReplayTest, ExamplePromptsPass) {
  const std::string text = FileBytes(RepoRoot() / "examples" / "prompts.jsonl");
  EXPECT_FALSE(ParsePrompts(text, "prompts.jsonl").prompts.empty());
  EXPECT_EQ(PromptsJsonlProblem(text), "");
}

}  // namespace
}  // namespace pw::fuzz
