#include "os/child_process.h"

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "os/signals.h"

namespace pw {

ChildProcess::~ChildProcess() {
  if (reaped_) return;
  ::kill(pid_, SIGKILL);
  Wait();
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), pidfd_(std::move(other.pidfd_)),
      reaped_(std::exchange(other.reaped_, true)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    ChildProcess old(std::move(*this));
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    reaped_ = std::exchange(other.reaped_, true);
  }
  return *this;
}

Result<ChildProcess> ChildProcess::Start(const SpawnOptions& options, std::optional<ChildSetup>* failed_step) {
  PW_ASSIGN_OR_RETURN(const pid_t pid, Spawn(options, failed_step));
  ChildProcess child;
  child.pid_ = pid;
  child.reaped_ = false;
  child.pidfd_.Reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));  // -1: TryReap by period
  return child;
}

std::optional<ExitStatus> ChildProcess::TryReap() { return Reap(/*block=*/false); }

ExitStatus ChildProcess::Wait() { return *Reap(/*block=*/true); }

std::optional<ExitStatus> ChildProcess::Reap(bool block) {
  if (reaped_) return ExitStatus{};
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(pid_, &status, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r == 0) return std::nullopt;
  reaped_ = true;
  pidfd_.Reset();
  ExitStatus exit;
  if (r < 0) {
    exit.signal = SIGKILL;
  } else if (WIFEXITED(status)) {
    exit.exited = true;
    exit.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
  }
  return exit;
}

void ChildProcess::SignalGroup(int sig) const {
  if (!reaped_) SignalProcessGroup(pid_, sig);
}

}  // namespace pw
