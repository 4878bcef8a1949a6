// AtomicFile: the file appears whole at Commit (durable or not), an
// abandoned writer leaves the old file and no .tmp, and a missing
// directory or a full disk is an IoError naming the file.
#include "os/atomic_file.h"

#include "os/fault_seam.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace pw {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class AtomicFileTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pw_atomic_file_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_P(AtomicFileTest, CommitReplacesTheFileWhole) {
  const std::string path = (dir_ / "out.txt").string();
  std::ofstream(path) << "old";
  AtomicFile file(path, /*durable=*/GetParam());
  ASSERT_TRUE(file.Open().ok());
  ASSERT_TRUE(file.Write("new ").ok());
  ASSERT_TRUE(file.Write("bytes").ok());
  EXPECT_EQ(ReadAll(path), "old");  // readers see the old file until Commit
  EXPECT_TRUE(fs::exists(file.temp_path()));
  ASSERT_TRUE(file.Commit().ok());
  EXPECT_EQ(ReadAll(path), "new bytes");
  EXPECT_EQ(file.bytes_written(), 9u);
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST_P(AtomicFileTest, AbandonedWriterLeavesTheOldFile) {
  const std::string path = (dir_ / "out.txt").string();
  std::ofstream(path) << "old";
  {
    AtomicFile file(path, GetParam());
    ASSERT_TRUE(file.Open().ok());
    ASSERT_TRUE(file.Write("half").ok());
  }
  EXPECT_EQ(ReadAll(path), "old");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST_P(AtomicFileTest, MissingDirectoryIsAnIoError) {
  AtomicFile file((dir_ / "no_such_dir" / "out.txt").string(), GetParam());
  const Status status = file.Open();
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  EXPECT_NE(status.message().find("out.txt.tmp"), std::string::npos) << status.message();
}

// A full disk (faked at the os/ seam, so the real error path runs): the
// write fails with the system's reason, the old file stays, no .tmp is left,
// and once the disk has room again writing works.
TEST_P(AtomicFileTest, AFullDiskFailsTheWriteAndKeepsTheOldFile) {
  const std::string path = (dir_ / "out.txt").string();
  std::ofstream(path) << "old";
  AtomicFile file(path, GetParam());
  ASSERT_TRUE(file.Open().ok());
  ASSERT_TRUE(file.Write("first ").ok());
  FakeDiskFull();
  const Status status = file.Write("second");
  ClearFakeFaults();
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  EXPECT_NE(status.message().find("No space left on device"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("after 6 bytes"), std::string::npos) << status.message();
  EXPECT_EQ(ReadAll(path), "old");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  AtomicFile again(path, GetParam());
  ASSERT_TRUE(again.Open().ok());
  ASSERT_TRUE(again.Write("new").ok());
  ASSERT_TRUE(again.Commit().ok());
  EXPECT_EQ(ReadAll(path), "new");
}

INSTANTIATE_TEST_SUITE_P(DurableOrNot, AtomicFileTest, ::testing::Bool());

}  // namespace
}  // namespace pw
