// The OpenBLAS core-type choice: only a generic core on a CPU with better
// kernels' instructions is changed.
#include <gtest/gtest.h>

#include <algorithm>

#include "os/blas_core.h"

namespace pw {
namespace {

const std::vector<std::string> kAvx512 = {"sse3", "avx", "avx2", "fma", "avx512f", "avx512cd",
                                          "avx512bw", "avx512dq", "avx512vl"};
const std::vector<std::string> kAvx2 = {"sse3", "avx", "avx2", "fma"};

TEST(BlasCore, GenericCoreOnAnAvx512CpuGetsSkylakeX) {
  EXPECT_EQ(BetterBlasCoreType("Prescott", kAvx512), "SkylakeX");
  EXPECT_EQ(BetterBlasCoreType("SandyBridge", kAvx512), "SkylakeX");
}

TEST(BlasCore, GenericCoreOnAnAvx2CpuGetsHaswell) {
  EXPECT_EQ(BetterBlasCoreType("Prescott", kAvx2), "Haswell");
  // AVX-512F alone is not enough for the SkylakeX kernels.
  EXPECT_EQ(BetterBlasCoreType("Nehalem", {"avx2", "fma", "avx512f"}), "Haswell");
}

TEST(BlasCore, NothingToGainLeavesOpenBlasAlone) {
  EXPECT_EQ(BetterBlasCoreType("SkylakeX", kAvx512), "");
  EXPECT_EQ(BetterBlasCoreType("Haswell", kAvx512), "");
  EXPECT_EQ(BetterBlasCoreType("Zen", kAvx2), "");
  EXPECT_EQ(BetterBlasCoreType("Prescott", {"sse3", "avx"}), "");
  EXPECT_EQ(BetterBlasCoreType("", kAvx512), "");  // not OpenBLAS
}

TEST(BlasCore, ReadsThisMachinesFlags) {
#if defined(__x86_64__)
  const std::vector<std::string> flags = CpuFlags();
  ASSERT_FALSE(flags.empty());
  EXPECT_NE(std::find(flags.begin(), flags.end(), "sse2"), flags.end());
#endif
  // The os test binary links no OpenBLAS of its own.
  (void)LoadedBlasCoreName();
}

}  // namespace
}  // namespace pw
