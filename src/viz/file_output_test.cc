#include "viz/file_output.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace pw {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class FileOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("pw_file_output_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FileOutputTest, WritesAndReplacesWithoutLeavingTheTemporary) {
  const fs::path file = dir_ / "out.svg";
  ASSERT_TRUE(WriteFileAtomically(file.string(), "first").ok());
  EXPECT_EQ(ReadAll(file), "first");
  const Status again = WriteFileAtomically(file.string(), std::string("second\0binary", 13));
  ASSERT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(ReadAll(file), std::string("second\0binary", 13));
  EXPECT_FALSE(fs::exists(dir_ / "out.svg.tmp"));
}

TEST_F(FileOutputTest, MissingDirectoryIsAClearError) {
  const fs::path file = dir_ / "no" / "such" / "out.svg";
  const Status s = WriteFileAtomically(file.string(), "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("directory '" + (dir_ / "no" / "such").string() + "' does not exist"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(fs::exists(file));
}

TEST_F(FileOutputTest, DirectoryAsTargetOrParentIsAnError) {
  const Status into_dir = WriteFileAtomically(dir_.string(), "x");
  ASSERT_FALSE(into_dir.ok());
  EXPECT_NE(into_dir.message().find("is a directory"), std::string::npos) << into_dir.message();

  const fs::path plain = dir_ / "plain";
  ASSERT_TRUE(WriteFileAtomically(plain.string(), "x").ok());
  const Status under_file = WriteFileAtomically((plain / "out.svg").string(), "x");
  ASSERT_FALSE(under_file.ok());
  EXPECT_NE(under_file.message().find("is not a directory"), std::string::npos) << under_file.message();

  EXPECT_EQ(WriteFileAtomically("", "x").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pw
