#include "os/poll.h"

#include <cerrno>

namespace pw {
namespace {

bool WaitFor(int fd, short events, int timeout_ms) {
  PollSet set;
  set.Add(fd, events);
  return set.Wait(timeout_ms) == 1;
}

}  // namespace

size_t PollSet::Add(int fd, short events) {
  fds_.push_back(pollfd{fd, events, 0});
  return fds_.size() - 1;
}

int PollSet::Wait(int timeout_ms) {
  const int ready = ::poll(fds_.data(), fds_.size(), timeout_ms);
  if (ready < 0) return errno == EINTR ? 0 : -1;
  return ready;
}

bool WaitReadable(int fd, int timeout_ms) { return WaitFor(fd, POLLIN, timeout_ms); }

bool WaitWritable(int fd, int timeout_ms) { return WaitFor(fd, POLLOUT, timeout_ms); }

}  // namespace pw
