// Pipe: both ends close-on-exec, bytes flow from write_end to read_end,
// EOF once the write end is closed; SetNonBlocking makes an empty read
// return EAGAIN.
#include "os/pipe.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>

namespace pw {
namespace {

TEST(PipeTest, CarriesBytesAndEndsWithEof) {
  Result<Pipe> pipe = Pipe::Create("a test");
  ASSERT_TRUE(pipe.ok()) << pipe.status().ToString();
  EXPECT_TRUE(fcntl(pipe->read_end.get(), F_GETFD) & FD_CLOEXEC);
  EXPECT_TRUE(fcntl(pipe->write_end.get(), F_GETFD) & FD_CLOEXEC);
  ASSERT_EQ(write(pipe->write_end.get(), "hi", 2), 2);
  pipe->write_end.Reset();
  char buffer[4];
  EXPECT_EQ(read(pipe->read_end.get(), buffer, sizeof buffer), 2);
  EXPECT_EQ(read(pipe->read_end.get(), buffer, sizeof buffer), 0);
}

TEST(PipeTest, NonBlockingReadOfAnEmptyPipeSaysEagain) {
  Result<Pipe> pipe = Pipe::Create("a test");
  ASSERT_TRUE(pipe.ok());
  SetNonBlocking(pipe->read_end.get());
  char c;
  EXPECT_EQ(read(pipe->read_end.get(), &c, 1), -1);
  EXPECT_EQ(errno, EAGAIN);
}

TEST(UniqueFdTest, CloseReportsTheResultOnce) {
  Result<Pipe> pipe = Pipe::Create("a test");
  ASSERT_TRUE(pipe.ok());
  EXPECT_EQ(pipe->write_end.Close(), 0);
  EXPECT_FALSE(pipe->write_end.valid());
  EXPECT_EQ(pipe->write_end.Close(), 0);  // nothing owned: nothing to close
}

}  // namespace
}  // namespace pw
