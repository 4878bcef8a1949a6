#include "runtime/allocator_stats.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace pw {
namespace {

TEST(AllocatorStats, CountsLiveTensorsAndTheirPeak) {
  InstallCountingCpuAllocator();
  InstallCountingCpuAllocator();  // idempotent
  ASSERT_TRUE(CpuAllocatorStats().counting);
  constexpr int64_t kBytes = int64_t{4} << 20;
  const int64_t base = CpuAllocatorStats().current_bytes;
  ResetCpuAllocatorPeak();
  {
    at::Tensor a = at::empty({kBytes / 4}, at::kFloat);
    at::Tensor b = at::ones({kBytes / 4}, at::kFloat) * 2;  // a temporary and its result
    const AllocatorStats held = CpuAllocatorStats();
    EXPECT_GE(held.current_bytes - base, 2 * kBytes);
    EXPECT_LT(held.current_bytes - base, 2 * kBytes + (int64_t{64} << 10));
    EXPECT_GE(held.peak_bytes - base, 3 * kBytes) << "ones() and the product were alive together";
  }
  const AllocatorStats after = CpuAllocatorStats();
  EXPECT_EQ(after.current_bytes, base) << "every counted byte is uncounted when its tensor dies";
  EXPECT_GE(after.peak_bytes - base, 3 * kBytes);
  ResetCpuAllocatorPeak();
  EXPECT_EQ(CpuAllocatorStats().peak_bytes, base);
}

}  // namespace
}  // namespace pw
