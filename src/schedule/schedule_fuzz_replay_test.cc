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

TEST(ScheduleFuzzReplayTest, TextCorpusPasses) {
  const auto corpus = SeedCorpus("schedule_text");
  int parsed = 0, refused = 0;
  for (const auto& [path, text] : corpus) {
    EXPECT_EQ(ScheduleTextProblem(text), "") << path;
    (ParseScheduleText(text, "seed").ok() ? parsed : refused) += 1;
  }
  // The seeds hold valid schedules and malformed ones.
  EXPECT_GE(parsed, 2) << "under " << RepoRoot();
  EXPECT_GE(refused, 2);
}

TEST(ScheduleFuzzReplayTest, CsvCorpusPasses) {
  const auto corpus = SeedCorpus("schedule_csv");
  int parsed = 0, refused = 0;
  for (const auto& [path, csv] : corpus) {
    EXPECT_EQ(ScheduleCsvProblem(csv), "") << path;
    (ParseScheduleCsv(csv, "seed").ok() ? parsed : refused) += 1;
  }
  EXPECT_GE(parsed, 2) << "under " << RepoRoot();
  EXPECT_GE(refused, 2);
}

}  // namespace
}  // namespace pw::fuzz
