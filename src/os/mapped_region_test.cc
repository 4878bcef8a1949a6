// MappedRegion: zeroed writable pages, unmapped on destruction, ownership
// handed out by Release and taken back by Adopt; 0 bytes is refused; a
// file maps read-only with its bytes, a missing one is NotFound.
#include "os/mapped_region.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace pw {
namespace {

TEST(MappedRegionTest, MapsZeroedWritableBytes) {
  Result<MappedRegion> region = MappedRegion::Anonymous(1 << 20);
  ASSERT_TRUE(region.ok()) << region.status().ToString();
  ASSERT_NE(region->data(), nullptr);
  EXPECT_EQ(region->size(), size_t{1} << 20);
  auto* bytes = static_cast<unsigned char*>(region->data());
  EXPECT_EQ(bytes[12345], 0);
  std::memset(bytes, 7, region->size());
  EXPECT_EQ(bytes[region->size() - 1], 7);
  region->Reset();
  EXPECT_EQ(region->data(), nullptr);
}

TEST(MappedRegionTest, ReleaseAndAdoptHandOwnershipAround) {
  Result<MappedRegion> region = MappedRegion::Anonymous(4096);
  ASSERT_TRUE(region.ok());
  void* data = region->Release();
  EXPECT_EQ(region->data(), nullptr);
  static_cast<char*>(data)[0] = 1;  // still mapped
  MappedRegion adopted = MappedRegion::Adopt(data, 4096);
  EXPECT_EQ(adopted.data(), data);
  MappedRegion moved = std::move(adopted);
  EXPECT_EQ(moved.data(), data);
  EXPECT_EQ(adopted.data(), nullptr);  // NOLINT(bugprone-use-after-move)
}

TEST(MappedRegionTest, ZeroBytesIsAnError) {
  EXPECT_EQ(MappedRegion::Anonymous(0).status().code(), StatusCode::kInvalidArgument);
}

TEST(MappedRegionTest, MapsAFileReadOnly) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("pw_mapped_" + std::to_string(getpid()))).string();
  std::ofstream(path, std::ios::binary) << "weights";
  Result<MappedRegion> file = MappedRegion::ReadOnlyFile(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ(file->size(), 7u);
  EXPECT_EQ(std::memcmp(file->data(), "weights", 7), 0);
  std::ofstream(path, std::ios::binary | std::ios::trunc).flush();
  Result<MappedRegion> empty = MappedRegion::ReadOnlyFile(path);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->size(), 0u);
  std::filesystem::remove(path);
  EXPECT_EQ(MappedRegion::ReadOnlyFile(path).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace pw
