// PollSet: poll(2) over a few descriptors, rebuilt by its owner before each
// wait. The launcher, the side-task host and the side-task process wait on
// pipes, sockets and pidfds this way instead of sleeping in a loop.
//
// Thread-safety: a plain value for one thread.
#pragma once

#include <poll.h>

#include <cstddef>
#include <vector>

namespace pw {

class PollSet {
 public:
  // Watches `fd` for `events` (POLLIN, POLLOUT); returns its index for
  // Ready(). A negative fd is kept but never ready.
  size_t Add(int fd, short events = POLLIN);
  void Clear() { fds_.clear(); }
  bool empty() const { return fds_.empty(); }

  // Blocks until a watched fd is ready or `timeout_ms` passed (-1: no
  // limit). Returns how many fds are ready; 0 on timeout and on EINTR (the
  // caller's loop re-checks its state either way), -1 on any other error.
  int Wait(int timeout_ms);

  // Whether the fd at `index` had any event (readable, writable, hang-up or
  // error) in the last Wait.
  bool Ready(size_t index) const { return fds_[index].revents != 0; }

 private:
  std::vector<pollfd> fds_;
};

// Blocks until `fd` is readable (or closed by its peer) or `timeout_ms`
// passed. True when readable; false on timeout, EINTR or error.
bool WaitReadable(int fd, int timeout_ms);

// Blocks until `fd` is writable (a non-blocking connect finished) or
// `timeout_ms` passed. True when writable.
bool WaitWritable(int fd, int timeout_ms);

}  // namespace pw
