// PollSet and WaitReadable: a timeout says 0, a written pipe is ready, and
// Ready() names which of several fds it was.
#include "os/poll.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "os/pipe.h"

namespace pw {
namespace {

TEST(PollTest, TimesOutWhenNothingIsReady) {
  Result<Pipe> pipe = Pipe::Create("a test");
  ASSERT_TRUE(pipe.ok());
  PollSet set;
  set.Add(pipe->read_end.get());
  EXPECT_EQ(set.Wait(10), 0);
  EXPECT_FALSE(WaitReadable(pipe->read_end.get(), 10));
}

TEST(PollTest, SaysWhichFdIsReady) {
  Result<Pipe> quiet = Pipe::Create("a test");
  Result<Pipe> busy = Pipe::Create("a test");
  ASSERT_TRUE(quiet.ok() && busy.ok());
  ASSERT_EQ(write(busy->write_end.get(), "x", 1), 1);
  PollSet set;
  const size_t q = set.Add(quiet->read_end.get());
  const size_t b = set.Add(busy->read_end.get());
  EXPECT_EQ(set.Wait(1000), 1);
  EXPECT_FALSE(set.Ready(q));
  EXPECT_TRUE(set.Ready(b));
  EXPECT_TRUE(WaitReadable(busy->read_end.get(), 0));
}

TEST(PollTest, ClosedWriterMakesTheReaderReady) {
  Result<Pipe> pipe = Pipe::Create("a test");
  ASSERT_TRUE(pipe.ok());
  pipe->write_end.Reset();
  PollSet set;
  const size_t i = set.Add(pipe->read_end.get());
  EXPECT_EQ(set.Wait(1000), 1);
  EXPECT_TRUE(set.Ready(i));
}

TEST(PollTest, WritableSocketPairEndIsWritable) {
  Result<Pipe> pipe = Pipe::Create("a test");
  ASSERT_TRUE(pipe.ok());
  EXPECT_TRUE(WaitWritable(pipe->write_end.get(), 100));
}

}  // namespace
}  // namespace pw
