#include "comm/background_waiter.h"

#include <gtest/gtest.h>

namespace pw {
namespace {

TEST(BackgroundWaiter, DrainReturnsTheFirstErrorOnceAndWaitsForAll) {
  BackgroundWaiter waiter;
  EXPECT_TRUE(waiter.Drain().ok()) << "nothing added";
  waiter.Add(PendingOp());
  waiter.Add(PendingOp::Failed(Status::IoError("peer 1 closed the connection")));
  waiter.Add(PendingOp::Failed(Status::IoError("second failure")));
  waiter.Add(PendingOp());
  Status drained = waiter.Drain();
  EXPECT_EQ(drained.code(), StatusCode::kIoError);
  EXPECT_NE(drained.message().find("peer 1"), std::string::npos) << drained.ToString();
  EXPECT_TRUE(waiter.FirstError().ok()) << "Drain clears the error";
  EXPECT_TRUE(waiter.Drain().ok());
}

TEST(BackgroundWaiter, FirstErrorIsSeenWithoutDraining) {
  BackgroundWaiter waiter;
  waiter.Add(PendingOp::Failed(Status::IoError("timed out")));
  for (int i = 0; i < 1000 && waiter.FirstError().ok(); ++i) std::this_thread::yield();
  ASSERT_TRUE(waiter.Drain().code() == StatusCode::kIoError);
}

// Destruction right after Add, many times: whether the thread is joined
// (nothing pending) or detached (an op still queued), nothing is left
// dangling (run under a sanitizer to see it) and nothing blocks.
TEST(BackgroundWaiter, DestructionNeverBlocks) {
  // (A destructor that blocked would hang here: ctest's timeout fails it.)
  for (int i = 0; i < 200; ++i) {
    BackgroundWaiter waiter;
    waiter.Add(PendingOp());
    if (i % 2 == 0) {
      waiter.Add(PendingOp::Failed(Status::IoError("peer gone")));
    } else {
      EXPECT_TRUE(waiter.FirstError().ok()) << "an op that completed fine is no error";
    }
  }
}

}  // namespace
}  // namespace pw
