#include "os/shared_memory.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <numeric>
#include <vector>

#include "os/memory.h"

namespace pw {
namespace {

std::vector<uint8_t> Pattern(int64_t n) {
  std::vector<uint8_t> bytes(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>((i * 131 + 7) % 251);
  return bytes;
}

TEST(SharedRegionTest, AnotherProcessMapsTheSealedBytes) {
  const int64_t n = (int64_t{3} << 20) + 5;  // not a whole number of pages
  const std::vector<uint8_t> want = Pattern(n);
  Result<SharedRegion> region = SharedRegion::Create("pw-test", n);
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  ASSERT_TRUE(region->Write(0, want.data(), 1000).ok());
  ASSERT_TRUE(region->Write(1000, want.data() + 1000, n - 1000).ok());
  ASSERT_TRUE(region->Seal().ok());
  ASSERT_EQ(std::vector<uint8_t>(region->data(), region->data() + n), want);

  // A child process (another address space) maps it by address and checks
  // every byte; its exit status says what it found.
  const std::string address = region->address();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Result<SharedRegion> seen = SharedRegion::Open(address, n);
    if (!seen.ok()) _exit(2);
    _exit(std::equal(want.begin(), want.end(), seen->data()) ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: could not open, 3: bytes differ";
}

TEST(SharedRegionTest, PagesCountAsSharedNotAsTheProcesssOwnMemory) {
  const int64_t n = int64_t{32} << 20;
  Result<ResidentMemory> before = ReadResidentMemory();
  Result<SharedRegion> region = SharedRegion::Create("pw-test", n);
  ASSERT_TRUE(region.ok());
  const std::vector<uint8_t> ones(static_cast<size_t>(n), 1);
  ASSERT_TRUE(region->Write(0, ones.data(), n).ok());
  ASSERT_TRUE(region->Seal().ok());
  EXPECT_EQ(std::accumulate(region->data(), region->data() + n, int64_t{0}), n);  // touch every page
  Result<ResidentMemory> after = ReadResidentMemory();
  ASSERT_TRUE(before.ok() && after.ok());
  if (after->file_bytes == 0) GTEST_SKIP() << "this kernel does not split VmRSS";
  EXPECT_GE(after->file_bytes - before->file_bytes, n * 9 / 10);
}

TEST(SharedRegionTest, SealedBytesCannotChangeAndBadUseIsAnError) {
  Result<SharedRegion> region = SharedRegion::Create("pw-test", 4096);
  ASSERT_TRUE(region.ok());
  const uint8_t byte = 1;
  Status past = region->Write(4096, &byte, 1);
  EXPECT_EQ(past.code(), StatusCode::kInvalidArgument) << past.ToString();
  EXPECT_NE(past.message().find("past its 4096 B"), std::string::npos) << past.ToString();
  ASSERT_TRUE(region->Seal().ok());
  EXPECT_EQ(region->Write(0, &byte, 1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(region->Seal().code(), StatusCode::kFailedPrecondition);

  Result<SharedRegion> wrong_size = SharedRegion::Open(region->address(), 8192);
  EXPECT_EQ(wrong_size.status().code(), StatusCode::kInvalidArgument) << wrong_size.status().ToString();
  const std::string address = region->address();
  region->CloseDescriptor();
  Result<SharedRegion> closed = SharedRegion::Open(address, 4096);
  EXPECT_EQ(closed.status().code(), StatusCode::kNotFound) << closed.status().ToString();
  EXPECT_EQ(SharedRegion::Open("12;rm", 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SharedRegion::Create("pw-test", 0).status().code(), StatusCode::kInvalidArgument);

  Result<SharedRegion> unsealed = SharedRegion::Create("pw-test", 4096);
  ASSERT_TRUE(unsealed.ok());
  Result<SharedRegion> opened = SharedRegion::Open(unsealed->address(), 4096);
  EXPECT_EQ(opened.status().code(), StatusCode::kInvalidArgument) << "an unsealed region could still change";
}

}  // namespace
}  // namespace pw
