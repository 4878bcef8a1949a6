// Token shards: both widths round-trip through the writer and the mapped
// reader, and damaged files are refused with the file named.
#include "text/token_shard.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace pw {
namespace {

namespace fs = std::filesystem;

fs::path TempPath(const std::string& name) {
  return fs::temp_directory_path() / ("pw_shard_" + std::to_string(::getpid()) + "_" + name);
}

TEST(TokenShard, BothWidthsRoundTripWithLlmCHeaders) {
  for (int width : {2, 4}) {
    const fs::path path = TempPath("w" + std::to_string(width) + ".bin");
    TokenShardWriter writer(path.string(), width);
    std::vector<int32_t> ids = {0, 1, 50256, 65535};
    if (width == 4) ids.push_back(128255);
    ASSERT_TRUE(writer.Append(ids).ok());
    ASSERT_TRUE(writer.Commit().ok());
    EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
    EXPECT_EQ(static_cast<int64_t>(fs::file_size(path)), kShardHeaderBytes + width * static_cast<int64_t>(ids.size()));
    std::ifstream in(path, std::ios::binary);
    int32_t header[3];
    in.read(reinterpret_cast<char*>(header), sizeof(header));
    EXPECT_EQ(header[0], width == 2 ? 20240520 : 20240801);
    EXPECT_EQ(header[1], width == 2 ? 1 : 7);
    EXPECT_EQ(header[2], static_cast<int32_t>(ids.size()));
    auto shard = TokenShard::Open(path.string());
    ASSERT_TRUE(shard.ok()) << shard.status().ToString();
    ASSERT_EQ(shard->size(), static_cast<int64_t>(ids.size()));
    EXPECT_EQ(shard->width(), width);
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ((*shard)[static_cast<int64_t>(i)], ids[i]);
    fs::remove(path);
  }
}

TEST(TokenShard, IdsTooWideForTheShardAreRefused) {
  TokenShardWriter writer(TempPath("narrow.bin").string(), 2);
  auto status = writer.Append(std::vector<int32_t>{70000});
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("does not fit a 16-bit shard"), std::string::npos) << status.ToString();
}

TEST(TokenShard, TruncatedAndForeignFilesAreRefusedNamingThem) {
  const fs::path path = TempPath("cut.bin");
  TokenShardWriter writer(path.string(), 2);
  ASSERT_TRUE(writer.Append(std::vector<int32_t>(100, 7)).ok());
  ASSERT_TRUE(writer.Commit().ok());
  fs::resize_file(path, kShardHeaderBytes + 150);
  auto cut = TokenShard::Open(path.string());
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find(path.string() + ": the header says 100 tokens"), std::string::npos)
      << cut.status().ToString();
  std::ofstream(path, std::ios::binary | std::ios::trunc) << std::string(2048, 'x');
  auto foreign = TokenShard::Open(path.string());
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("is not a token shard's"), std::string::npos) << foreign.status().ToString();
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "tiny";
  EXPECT_FALSE(TokenShard::Open(path.string()).ok());
  fs::remove(path);
  EXPECT_EQ(TokenShard::Open(path.string()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace pw
