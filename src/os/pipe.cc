#include "os/pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pw {

Result<Pipe> Pipe::Create(const std::string& purpose) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return Status::IoError("pipe for " + purpose + " failed: " + std::strerror(errno) +
                           " (out of file descriptors? raise `ulimit -n`)");
  }
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace pw
