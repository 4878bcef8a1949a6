// The progress line and printer: pure formatting on hand-made figures, and
// what each printer mode writes.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "viz/progress.h"

namespace pw {
namespace {

TEST(Progress, FormatsBarLossRateAndEta) {
  ProgressInfo info;
  info.step = 12;
  info.total = 100;
  info.loss = 3.2149;
  info.tokens_per_s = 15234;
  info.elapsed_s = 6;  // 0.5 s per step, 88 left -> 44 s
  EXPECT_EQ(FormatProgress(info), "step 12/100 [==>                 ] 12% loss 3.21 15.2k tok/s ETA 0:44");
  info.step = 100;
  info.elapsed_s = 50;
  EXPECT_EQ(FormatProgress(info), "step 100/100 [====================] 100% loss 3.21 15.2k tok/s ETA 0:00");
  info.step = 0;
  EXPECT_EQ(FormatProgress(info), "step 0/100 [>                   ] 0% loss 3.21 15.2k tok/s ETA ?");
  info.step = 60;  // resumed at 50: 10 steps in 20 s, 40 left
  info.first_step = 50;
  info.elapsed_s = 20;
  EXPECT_EQ(FormatProgress(info), "step 60/100 [============>       ] 60% loss 3.21 15.2k tok/s ETA 1:20");
}

TEST(Progress, CountsOtherUnitsWithoutLoss) {
  ProgressInfo info;
  info.label = "infer";
  info.unit = "requests";
  info.show_loss = false;
  info.step = 3;
  info.total = 10;
  info.tokens_per_s = 1234;
  info.elapsed_s = 3;
  info.note = "rank 0's share";
  EXPECT_EQ(FormatProgress(info), "infer 3/10 requests [======>             ] 30% 1.2k tok/s ETA 0:07 (rank 0's share)");
}

TEST(Progress, EtaAndRateUnits) {
  EXPECT_EQ(FormatEta(42), "0:42");
  EXPECT_EQ(FormatEta(725), "12:05");
  EXPECT_EQ(FormatEta(3723), "1:02:03");
  EXPECT_EQ(FormatEta(-1), "?");
  EXPECT_EQ(FormatRate(950), "950");
  EXPECT_EQ(FormatRate(15234), "15.2k");
  EXPECT_EQ(FormatRate(1.234e6), "1.23M");
}

std::string ReadAll(std::FILE* f) {
  std::rewind(f);
  std::string text;
  char buf[256];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

TEST(Progress, PrinterModes) {
  ProgressInfo info;
  info.step = 1;
  info.total = 2;
  const std::string line = "step 1/2 [==========>         ] 50% loss 0.00 0 tok/s ETA 0:00";
  {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    {
      ProgressPrinter printer(f, ProgressMode::kPlain);
      EXPECT_FALSE(printer.active());
      printer.Update(info);
      printer.Message("val step 0 loss 1.0");
    }
    EXPECT_EQ(ReadAll(f), "val step 0 loss 1.0\n");
  }
  {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    {
      ProgressPrinter printer(f, ProgressMode::kRelay);
      printer.Update(info);
    }
    EXPECT_EQ(ReadAll(f), "progress: " + line + "\n");
  }
  {
    std::FILE* f = std::tmpfile();
    std::FILE* other = std::tmpfile();
    ASSERT_NE(f, nullptr);
    ASSERT_NE(other, nullptr);
    {
      ProgressPrinter printer(f, ProgressMode::kInPlace);
      printer.Update(info);
      printer.Message("val");
      printer.RelayLine("[rank 0] progress: " + line, other);
      printer.RelayLine("[rank 1] hello", other);
    }
    EXPECT_EQ(ReadAll(f), "\r" + line + "\x1b[K\nval\n\r" + line + "\x1b[K\n");
    EXPECT_EQ(ReadAll(other), "[rank 1] hello\n");
  }
}

}  // namespace
}  // namespace pw
