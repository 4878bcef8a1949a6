// ChildProcess: a child started by Spawn (os/spawn.h), owned until it is
// reaped. It holds a pidfd (pidfd_open) so that a PollSet can wait for the
// exit together with the child's pipes; on kernels or sandboxes without
// pidfds, pidfd() is -1 and the owner calls TryReap at a short period.
//
// A ChildProcess destroyed before it was reaped kills the child (SIGKILL)
// and reaps it, so no child outlives its owner's interest or stays a zombie.
//
// Thread-safety: a plain value for one thread.
#pragma once

#include <sys/types.h>

#include <optional>

#include "core/status.h"
#include "os/spawn.h"
#include "os/unique_fd.h"

namespace pw {

// How a child ended: exited with a code, or killed by a signal.
struct ExitStatus {
  bool exited = false;
  int exit_code = 0;  // when exited
  int signal = 0;     // when killed
};

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Spawn(options, failed_step), then pidfd_open. Blocks as Spawn does; its
  // errors.
  static Result<ChildProcess> Start(const SpawnOptions& options,
                                    std::optional<ChildSetup>* failed_step = nullptr);

  // -1 before Start.
  pid_t pid() const { return pid_; }
  // Readable once the child has exited; -1 when pidfds are unavailable or
  // the child was reaped.
  int pidfd() const { return pidfd_.get(); }
  bool reaped() const { return reaped_; }

  // Reaps the child if it has exited (waitpid WNOHANG); nullopt while it
  // runs. Never blocks. A child that cannot be waited for (not ours any
  // more) reads as killed by SIGKILL.
  std::optional<ExitStatus> TryReap();
  // Blocks until the child exits, and reaps it.
  ExitStatus Wait();

  // Sends `sig` to the child's process group (SpawnOptions::
  // new_process_group): the child and what it started. Nothing once reaped.
  void SignalGroup(int sig) const;

 private:
  std::optional<ExitStatus> Reap(bool block);

  pid_t pid_ = -1;
  UniqueFd pidfd_;
  bool reaped_ = true;
};

}  // namespace pw
