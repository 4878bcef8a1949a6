// BackgroundWaiter: waits for asynchronous operations (sends) on a thread of
// its own, in the order they were handed over, and destroys each one as
// soon as it completes — so a sent tensor is freed when the peer has it,
// not when the step ends.
//
// Why a thread: c10d's Gloo send/recv Work never reports completion until
// someone waits for it (isCompleted() stays false), so the thread that
// issues the operations cannot release finished ones without blocking.
//
// Thread-safety: Add, FirstError and Drain are called by one owner thread;
// the waiter's own thread only waits. Failure: the first failed operation's
// Status is kept; later operations are still waited for (each is bounded by
// its group's timeout), so Drain never hangs past those timeouts.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "comm/comm_group.h"
#include "core/status.h"

namespace pw {

class BackgroundWaiter {
 public:
  BackgroundWaiter();
  // Waits for every operation still queued, then stops the thread.
  ~BackgroundWaiter();
  BackgroundWaiter(const BackgroundWaiter&) = delete;
  BackgroundWaiter& operator=(const BackgroundWaiter&) = delete;

  // Queues `op`; returns at once.
  void Add(PendingOp op);
  // Non-blocking: the first error seen so far (Ok when none).
  Status FirstError();
  // Blocks until every operation added so far has completed; returns the
  // first error since the last Drain and clears it.
  Status Drain();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable work_;   // an op was added, or stop
  std::condition_variable idle_;   // the queue ran empty
  std::deque<PendingOp> queue_;
  bool waiting_ = false;           // the thread holds an op it is waiting for
  bool stop_ = false;
  Status first_error_;
  std::thread thread_;             // last: starts after the members it uses
};

}  // namespace pw
