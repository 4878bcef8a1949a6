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
// Destruction never blocks on a peer: with operations still pending (the
// step failed, a peer may never receive) the thread is detached and ends
// when they do, or with the process.
#pragma once

#include <memory>
#include <thread>

#include "comm/comm_group.h"
#include "core/status.h"

namespace pw {

class BackgroundWaiter {
 public:
  BackgroundWaiter();
  // Stops the thread; see the header comment for pending operations.
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
  struct State;  // shared with the thread, so a detached thread outlives this object safely
  static void Run(const std::shared_ptr<State>& state);

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace pw
