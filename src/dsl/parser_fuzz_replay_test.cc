// Replays the fuzzer's seed corpus (fuzz/corpus/pipe/) and the example
// programs (examples/schedules/*.pipe) through the fuzz target's own check
// (fuzz/pipe_parser_fuzz.cc; fuzz/corpus_replay.h says why).
#define PW_FUZZ_REPLAY
#include "../../fuzz/pipe_parser_fuzz.cc"

#include <gtest/gtest.h>

#include "../../fuzz/corpus_replay.h"

namespace pw::dsl {
namespace {

// Every seed passes the check; the seeds hold valid programs, not only
// errors.
TEST(ParserFuzzReplayTest, SeedCorpusPasses) {
  const fuzz::CorpusReplay r = fuzz::ReplaySeedCorpus("pipe", PipeParserRoundTripProblem, [](std::string_view t) {
    return ParsePipeProgram(t, "seed").ok();
  });
  ASSERT_GT(r.files, 0) << "no fuzz/corpus/pipe under " << fuzz::RepoRoot();
  EXPECT_EQ(r.problems, std::vector<std::string>{});
  EXPECT_GE(r.accepted, 5);
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
