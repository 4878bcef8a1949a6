#include "core/units.h"

#include <gtest/gtest.h>

namespace pw {
namespace {

TEST(UnitsTest, ParsesSizesWithUnits) {
  EXPECT_DOUBLE_EQ(*ParseByteSize("1024"), 1024);
  EXPECT_DOUBLE_EQ(*ParseByteSize("8GiB"), 8.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(*ParseByteSize("1.5 MB"), 1.5e6);
  EXPECT_DOUBLE_EQ(*ParseByteSize("2kib"), 2048);
  for (const char* bad : {"", "abc", "-1", "5 parsecs", "1e400"}) {
    Result<double> r = ParseByteSize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("8GiB"), std::string::npos);
  }
}

TEST(UnitsTest, FormatsBinaryUnits) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(8.0 * 1024 * 1024 * 1024), "8 GiB");
}

}  // namespace
}  // namespace pw
