// Replays the fuzzer's seed corpus (fuzz/corpus/pipe/) and the example
// programs (examples/schedules/*.pipe) through the fuzz target's own check
// (fuzz/pipe_parser_fuzz.cc; fuzz/corpus_replay.h says why).
#define PW_FUZZ_REPLAY
#include "../../fuzz/pipe_parser_fuzz.cc"

#include <gtest/gtest.h>

#include "../../fuzz/corpus_replay.h"

namespace pw::dsl {
namespace {

TEST(ParserFuzzReplayTest, SeedCorpusPasses) {
  const auto corpus = fuzz::SeedCorpus("pipe");
  ASSERT_FALSE(corpus.empty()) << "no fuzz/corpus/pipe under " << fuzz::RepoRoot();
  int parsed = 0;
  for (const auto& [path, text] : corpus) {
    EXPECT_EQ(PipeParserRoundTripProblem(text), "") << path;
    parsed += ParsePipeProgram(text, path.string()).ok();
  }
  // The seeds hold valid programs, not only errors.
  EXPECT_GE(parsed, 5);
}

TEST(ParserFuzzReplayTest, ExampleProgramsParseAndRoundTrip) {
  for (const auto& f : fuzz::FilesIn(fuzz::RepoRoot() / "examples" / "schedules", ".pipe")) {
    Result<PipeProgram> p = LoadPipeFile(f.string());
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ(PipeParserRoundTripProblem(fuzz::FileBytes(f)), "") << f;
  }
}

}  // namespace
}  // namespace pw::dsl
