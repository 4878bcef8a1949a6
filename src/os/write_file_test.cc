// WriteFile (os/atomic_file.h): whole files replaced atomically, with
// errors that name the missing directory or the directory in the way.
#include "os/atomic_file.h"

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

class WriteFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("pw_write_file_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(WriteFileTest, WritesAndReplacesWithoutLeavingTheTemporary) {
  const fs::path file = dir_ / "out.svg";
  ASSERT_TRUE(WriteFile(file.string(), "first", Durability::kAtomic).ok());
  EXPECT_EQ(ReadAll(file), "first");
  const Status again = WriteFile(file.string(), std::string("second\0binary", 13), Durability::kAtomic);
  ASSERT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(ReadAll(file), std::string("second\0binary", 13));
  EXPECT_FALSE(fs::exists(dir_ / "out.svg.tmp"));
}

TEST_F(WriteFileTest, MissingDirectoryIsAClearError) {
  const fs::path file = dir_ / "no" / "such" / "out.svg";
  const Status s = WriteFile(file.string(), "x", Durability::kAtomic);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("directory '" + (dir_ / "no" / "such").string() + "' does not exist"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(fs::exists(file));
}

TEST_F(WriteFileTest, DirectoryAsTargetOrParentIsAnError) {
  const Status into_dir = WriteFile(dir_.string(), "x", Durability::kAtomic);
  ASSERT_FALSE(into_dir.ok());
  EXPECT_NE(into_dir.message().find("is a directory"), std::string::npos) << into_dir.message();

  const fs::path plain = dir_ / "plain";
  ASSERT_TRUE(WriteFile(plain.string(), "x", Durability::kAtomic).ok());
  const Status under_file = WriteFile((plain / "out.svg").string(), "x", Durability::kAtomic);
  ASSERT_FALSE(under_file.ok());
  EXPECT_NE(under_file.message().find("is not a directory"), std::string::npos) << under_file.message();

  EXPECT_EQ(WriteFile("", "x", Durability::kAtomic).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pw
