#include "os/memory.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>

#include <vector>

namespace pw {
namespace {

TEST(Memory, ReadsThisHostsTotals) {
  Result<MemoryInfo> info = ReadMemoryInfo();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_GT(info->total_bytes, int64_t{64} << 20);
  EXPECT_GT(info->available_bytes, 0);
  EXPECT_LE(info->available_bytes, info->total_bytes);
}

TEST(Memory, ParsesKibibytesAndNeedsMemTotal) {
  Result<MemoryInfo> info = ParseMemInfo(
      "MemTotal:       16314252 kB\nMemFree:         1000 kB\nMemAvailable:    8000000 kB\n"
      "SwapTotal:     0 kB\n");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->total_bytes, int64_t{16314252} * 1024);
  EXPECT_EQ(info->available_bytes, int64_t{8000000} * 1024);

  info = ParseMemInfo("MemTotal: 2048 kB\nMemFree: 1024 kB\n");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->available_bytes, 1024 * 1024) << "MemFree when MemAvailable is missing";

  info = ParseMemInfo("HugeMemTotal: 5 kB\nMemFree: 1 kB\n");
  ASSERT_FALSE(info.ok()) << "a key that only ends in MemTotal does not count";
  EXPECT_EQ(info.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(info.status().message().find("MemTotal"), std::string::npos);
}

TEST(Memory, ParsesResidentSet) {
  Result<ResidentMemory> r = ParseResidentMemory("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->current_bytes, 1024 * 1024);
  EXPECT_EQ(r->peak_bytes, 2048 * 1024);
  EXPECT_EQ(r->file_bytes, 0);  // a kernel that does not split VmRSS
  EXPECT_FALSE(ParseResidentMemory("Name:\tkthreadd\n").ok());
  // Linux >= 4.5: anonymous, file-backed and shared pages apart.
  r = ParseResidentMemory("VmHWM:\t  4096 kB\nVmRSS:\t  3072 kB\nRssAnon:\t 1024 kB\n"
                          "RssFile:\t  1536 kB\nRssShmem:\t  512 kB\n");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->file_bytes, 2048 * 1024);
  EXPECT_EQ(r->anon_bytes(), 1024 * 1024);
  EXPECT_EQ(r->anon_peak_bytes(), 2048 * 1024);
}

// A peak made by touching 64 MiB and freeing it is forgotten by the reset.
TEST(Memory, ResetLowersThePeakToTheCurrentResidentSet) {
  constexpr size_t kBytes = size_t{64} << 20;
  {
    std::vector<char> big(kBytes, 1);
    ASSERT_EQ(big[kBytes - 1], 1);
  }
  Result<ResidentMemory> before = ReadResidentMemory();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  ASSERT_TRUE(ResetResidentPeak().ok());
  Result<ResidentMemory> after = ReadResidentMemory();
  ASSERT_TRUE(after.ok());
  EXPECT_LT(after->peak_bytes, before->peak_bytes);
  EXPECT_LE(after->peak_bytes, after->current_bytes + (int64_t{8} << 20));
}

long MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Writes every page of a fresh `bytes` buffer, frees it, and returns the
// page faults that took.
long FaultsToFillAndFree(size_t bytes) {
  const long before = MinorFaults();
  // Through a volatile pointer: the compiler may not drop the buffer.
  volatile char* p = static_cast<char*>(std::malloc(bytes));
  for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
  std::free(const_cast<char*>(p));
  return MinorFaults() - before;
}

// A buffer freed and asked for again is served from memory the process
// kept: no page fault per 4 KiB. glibc's defaults map the first 24 MiB
// buffer, unmap it on free, and fault in a fresh heap extension for the
// second (6,144 faults each).
TEST(Memory, FreedMemoryIsReusedWithoutPageFaults) {
  ASSERT_TRUE(KeepFreedMemoryForReuse().ok());
  constexpr size_t kBytes = size_t{24} << 20;
  const long first = FaultsToFillAndFree(kBytes);
  const long second = FaultsToFillAndFree(kBytes);
  EXPECT_GT(first, 1000) << "the first use of fresh memory faults its pages in";
  EXPECT_LT(second, 100) << "the second buffer should reuse the first one's pages";
}

}  // namespace
}  // namespace pw
