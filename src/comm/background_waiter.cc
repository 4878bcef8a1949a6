#include "comm/background_waiter.h"

#include <utility>

namespace pw {

BackgroundWaiter::BackgroundWaiter() : thread_([this] { Run(); }) {}

BackgroundWaiter::~BackgroundWaiter() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_one();
  thread_.join();
}

void BackgroundWaiter::Add(PendingOp op) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(op));
  }
  work_.notify_one();
}

Status BackgroundWaiter::FirstError() {
  std::lock_guard<std::mutex> lock(mu_);
  return first_error_;
}

Status BackgroundWaiter::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [this] { return queue_.empty() && !waiting_; });
  return std::exchange(first_error_, Status::Ok());
}

void BackgroundWaiter::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop requested and nothing left
    PendingOp op = std::move(queue_.front());
    queue_.pop_front();
    waiting_ = true;
    lock.unlock();
    Status status = op.Wait();
    { PendingOp done = std::move(op); }  // frees the operation's tensors outside the lock
    lock.lock();
    waiting_ = false;
    if (!status.ok() && first_error_.ok()) first_error_ = std::move(status);
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace pw
