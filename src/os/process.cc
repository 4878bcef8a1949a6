#include "os/process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "core/status_record.h"
#include "os/environment.h"
#include "os/fd_io.h"

namespace pw {

int ProcessId() { return static_cast<int>(::getpid()); }

std::optional<std::string> WhyNotExecutable(const std::string& path) {
  if (::access(path.c_str(), X_OK) == 0) return std::nullopt;
  return std::string(std::strerror(errno));
}

int ReplaceProcessImage(const std::string& path, char** argv) {
  ::execv(path.c_str(), argv);
  return errno;
}

void KillParentAndSelf() {
  ::kill(::getppid(), SIGKILL);
  KillSelf();
}

void KillSelf() {
  ::raise(SIGKILL);
  ::_exit(137);  // SIGKILL cannot be blocked; this only satisfies [[noreturn]]
}

std::optional<ChildEnd> PeekChildEnd(int pid, bool block) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG)) != 0 ||
      info.si_pid == 0) {
    return std::nullopt;
  }
  return ChildEnd{info.si_code, info.si_status};
}

void ReapChild(int pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

void WriteStatusRecordIfAsked(const Status& status) {
  if (status.ok() || EnvironmentVariable(kStatusRecordEnv) != "1") return;
  WriteStderrAtomically(StatusRecordLine(status) + "\n");
}

void IgnoreBrokenPipes() { std::signal(SIGPIPE, SIG_IGN); }

void HandleInterrupts(void (*handler)(int)) {
  std::signal(SIGINT, handler);
  std::signal(SIGTERM, handler);
}

void DefaultInterrupts() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

}  // namespace pw
