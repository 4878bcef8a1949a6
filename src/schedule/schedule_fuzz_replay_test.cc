// Replays the seed corpora of the schedule text and CSV fuzz targets
// (fuzz/corpus/schedule_text/, fuzz/corpus/schedule_csv/) through the
// targets' own checks (fuzz/corpus_replay.h says why).
#define PW_FUZZ_REPLAY
#include "../../fuzz/schedule_csv_fuzz.cc"
#include "../../fuzz/schedule_text_fuzz.cc"

#include <gtest/gtest.h>

#include "../../fuzz/corpus_replay.h"

namespace pw::fuzz {
namespace {

// Every seed passes the check, and the seeds hold valid files and
// malformed ones.
TEST(ScheduleFuzzReplayTest, TextCorpusPasses) {
  const CorpusReplay r = ReplaySeedCorpus("schedule_text", ScheduleTextProblem,
                                          [](std::string_view t) { return ParseScheduleText(t, "seed").ok(); });
  EXPECT_EQ(r.problems, std::vector<std::string>{});
  EXPECT_GE(r.accepted, 2) << "under " << RepoRoot();
  EXPECT_GE(r.refused, 2);
}

TEST(ScheduleFuzzReplayTest, CsvCorpusPasses) {
  const CorpusReplay r = ReplaySeedCorpus("schedule_csv", ScheduleCsvProblem,
                                          [](std::string_view t) { return ParseScheduleCsv(t, "seed").ok(); });
  EXPECT_EQ(r.problems, std::vector<std::string>{});
  EXPECT_GE(r.accepted, 2) << "under " << RepoRoot();
  EXPECT_GE(r.refused, 2);
}

}  // namespace
}  // namespace pw::fuzz
