// Replays the seed corpus of the prompts JSONL fuzz target
// (fuzz/corpus/prompts_jsonl/) and examples/prompts.jsonl through its own
// check (fuzz/corpus_replay.h says why).
#define PW_FUZZ_REPLAY
#include "../../fuzz/prompts_jsonl_fuzz.cc"

#include <gtest/gtest.h>

#include "../../fuzz/corpus_replay.h"

namespace pw::fuzz {
namespace {

TEST(PromptsFuzzReplayTest, SeedCorpusPasses) {
  const auto corpus = SeedCorpus("prompts_jsonl");
  size_t prompts = 0, problems = 0;
  for (const auto& [path, text] : corpus) {
    EXPECT_EQ(PromptsJsonlProblem(text), "") << path;
    const PromptFile file = ParsePrompts(text, "seed");
    prompts += file.prompts.size();
    problems += file.problems.size();
  }
  // The seeds hold valid prompts and malformed lines.
  EXPECT_GE(prompts, 3u) << "under " << RepoRoot();
  EXPECT_GE(problems, 3u);
}

TEST(PromptsFuzzReplayTest, ExamplePromptsPass) {
  const std::string text = FileBytes(RepoRoot() / "examples" / "prompts.jsonl");
  EXPECT_FALSE(ParsePrompts(text, "prompts.jsonl").prompts.empty());
  EXPECT_EQ(PromptsJsonlProblem(text), "");
}

}  // namespace
}  // namespace pw::fuzz
