// UniqueFd: the one owner of a file descriptor, which it closes exactly once
// (when destroyed or reset). Move-only, so an fd cannot be closed twice or
// leaked on an early return.
//
// Thread-safety: a plain value; one owner at a time.
#pragma once

#include <unistd.h>

#include <utility>

namespace pw {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  // The descriptor, or -1 when none is owned.
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

  // Gives up ownership without closing; returns the descriptor.
  int Release() { return std::exchange(fd_, -1); }

  // Closes the owned descriptor (if any) and owns `fd` instead. close(2)'s
  // result is ignored: on Linux the descriptor is gone either way.
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

  // Closes the owned descriptor now and returns close(2)'s result (0, or -1
  // with errno set; 0 when none is owned): a writer checks it, because a
  // failed close can mean lost data.
  int Close() {
    const int fd = Release();
    return fd >= 0 ? ::close(fd) : 0;
  }

 private:
  int fd_ = -1;
};

}  // namespace pw
