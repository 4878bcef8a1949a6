// Pipe: a pipe(2) whose two ends are UniqueFds, both close-on-exec, so an
// end handed to a child (SpawnOptions::fds) reaches only that child.
//
// Thread-safety: a plain value; one owner at a time.
#pragma once

#include "core/status.h"
#include "os/unique_fd.h"

namespace pw {

struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;

  // Makes the pipe (pipe2 with O_CLOEXEC). Never blocks. IoError naming
  // `purpose` (e.g. "rank 2's stdout") when the process or the system is
  // out of descriptors.
  static Result<Pipe> Create(const std::string& purpose);
};

// Makes reads and writes on `fd` return EAGAIN instead of blocking. Failure
// (a closed fd) is ignored: the next read reports it.
void SetNonBlocking(int fd);

}  // namespace pw
