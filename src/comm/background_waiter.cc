#include "comm/background_waiter.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <utility>

namespace pw {

struct BackgroundWaiter::State {
  std::mutex mu;
  std::condition_variable work;  // an op was added, or stop
  std::condition_variable idle;  // the queue ran empty
  std::deque<PendingOp> queue;
  bool waiting = false;          // the thread holds an op it is waiting for
  bool stop = false;
  Status first_error;
};

BackgroundWaiter::BackgroundWaiter()
    : state_(std::make_shared<State>()), thread_([state = state_] { Run(state); }) {}

BackgroundWaiter::~BackgroundWaiter() {
  bool pending = false;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop = true;
    pending = state_->waiting || !state_->queue.empty();
  }
  state_->work.notify_one();
  if (pending) {
    thread_.detach();  // it holds the state; it ends when its waits do
  } else {
    thread_.join();
  }
}

void BackgroundWaiter::Add(PendingOp op) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->queue.push_back(std::move(op));
  }
  state_->work.notify_one();
}

Status BackgroundWaiter::FirstError() {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->first_error;
}

Status BackgroundWaiter::Drain() {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->idle.wait(lock, [this] { return state_->queue.empty() && !state_->waiting; });
  return std::exchange(state_->first_error, Status::Ok());
}

void BackgroundWaiter::Run(const std::shared_ptr<State>& state) {
  std::unique_lock<std::mutex> lock(state->mu);
  while (true) {
    state->work.wait(lock, [&] { return state->stop || !state->queue.empty(); });
    if (state->queue.empty()) return;  // stop requested and nothing left
    PendingOp op = std::move(state->queue.front());
    state->queue.pop_front();
    state->waiting = true;
    lock.unlock();
    Status status = op.Wait();
    { PendingOp done = std::move(op); }  // frees the operation's tensors outside the lock
    lock.lock();
    state->waiting = false;
    if (!status.ok() && state->first_error.ok()) state->first_error = std::move(status);
    if (state->queue.empty()) state->idle.notify_all();
  }
}

}  // namespace pw
