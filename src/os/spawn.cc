#include "os/spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace pw {
namespace {

// What the child writes to the error pipe when a step fails.
struct ChildError {
  ChildSetup step;
  int err;
};

// A NULL-terminated char* array over owned strings, built before fork.
class CStringArray {
 public:
  explicit CStringArray(const std::vector<std::string>& strings) : strings_(strings) {
    for (auto& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  char* const* get() const { return const_cast<char* const*>(pointers_.data()); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Child only: marks fds [first, last] close-on-exec (not closing them keeps
// the error pipe usable until exec). close_range(CLOSE_RANGE_CLOEXEC) on
// Linux >= 5.11; otherwise one fcntl per possible fd.
void CloexecRange(unsigned first, unsigned last) {
  if (first > last) return;
#ifdef SYS_close_range
  if (syscall(SYS_close_range, first, last, 4U /*CLOSE_RANGE_CLOEXEC*/) == 0) return;
#endif
  rlimit nofile{};
  unsigned max_fd = 65536;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
    max_fd = static_cast<unsigned>(std::min<rlim_t>(nofile.rlim_cur, 1 << 20));
  }
  for (unsigned fd = first; fd <= last && fd < max_fd; ++fd) fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
}

// Child only: reports `step` and errno to the parent and exits.
[[noreturn]] void ChildFail(int error_fd, ChildSetup step) {
  const ChildError e{step, errno};
  signal(SIGPIPE, SIG_IGN);  // the parent may no longer read (stop_before_exec)
  (void)!write(error_fd, &e, sizeof(e));
  _exit(127);
}

std::string StepFailure(const ChildError& e, const SpawnOptions& options) {
  std::string what = ChildSetupName(e.step);
  if (e.step == ChildSetup::kExec) what += " of '" + options.argv[0] + "'";
  if (e.step == ChildSetup::kPinToCpu) what += " to cpu " + std::to_string(options.cpu);
  if (e.step == ChildSetup::kAddressSpaceLimit) {
    what += " to " + std::to_string(options.address_space_limit_bytes) + " bytes";
  }
  return what + " failed in the child: " + std::strerror(e.err);
}

}  // namespace

const char* ChildSetupName(ChildSetup step) {
  switch (step) {
    case ChildSetup::kNewProcessGroup: return "setpgid (new process group)";
    case ChildSetup::kDieWithParent: return "prctl(PR_SET_PDEATHSIG)";
    case ChildSetup::kResetSignals: return "resetting signals";
    case ChildSetup::kAddressSpaceLimit: return "setrlimit(RLIMIT_AS)";
    case ChildSetup::kPinToCpu: return "sched_setaffinity";
    case ChildSetup::kIdlePriority: return "sched_setscheduler(SCHED_IDLE)";
    case ChildSetup::kRedirectFds: return "dup2 of the child's descriptors";
    case ChildSetup::kCloseOtherFds: return "closing other descriptors";
    case ChildSetup::kStopBeforeExec: return "SIGSTOP before exec";
    case ChildSetup::kExec: return "exec";
  }
  return "child setup";
}

std::optional<std::string> FindExecutable(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (access(name.c_str(), X_OK) == 0) return name;
    return std::nullopt;
  }
  const char* path_env = std::getenv("PATH");
  std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

Result<pid_t> Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return Status::InvalidArgument("spawn: no program (empty argv)");
  if (options.cpu >= CPU_SETSIZE) {
    return Status::InvalidArgument("spawn: cpu " + std::to_string(options.cpu) + " is beyond CPU_SETSIZE (" +
                                   std::to_string(CPU_SETSIZE) + ")");
  }

  // Everything the child needs, built before fork.
  const CStringArray argv(options.argv);
  std::optional<CStringArray> envp;
  if (options.env) envp.emplace(*options.env);
  cpu_set_t cpu_set;
  CPU_ZERO(&cpu_set);
  if (options.cpu >= 0) CPU_SET(options.cpu, &cpu_set);
  const rlimit limit{static_cast<rlim_t>(options.address_space_limit_bytes),
                     static_cast<rlim_t>(options.address_space_limit_bytes)};
  // The child's kept descriptors >= 3, ascending: the gaps between them are
  // marked close-on-exec. Sources are first copied above every target, so a
  // source that is also another mapping's target is not overwritten.
  std::vector<int> kept;
  int max_target = 2;
  for (const auto& [target, source] : options.fds) {
    if (target < 0 || source < 0) return Status::InvalidArgument("spawn: negative descriptor in fds");
    max_target = std::max(max_target, target);
    if (target >= 3) kept.push_back(target);
  }
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  std::vector<int> copies(options.fds.size(), -1);
  const int sigs_to_reset[] = {SIGTERM, SIGINT, SIGPIPE, SIGHUP, SIGQUIT, SIGCHLD};

  int error_pipe[2];
  if (pipe2(error_pipe, O_CLOEXEC) != 0) return Status::IoError(std::string("spawn: pipe: ") + std::strerror(errno));
  if (error_pipe[1] <= max_target) {  // no target may overwrite it in the child
    const int moved = fcntl(error_pipe[1], F_DUPFD_CLOEXEC, max_target + 1);
    const int e = errno;
    close(error_pipe[1]);
    error_pipe[1] = moved;
    if (moved < 0) {
      close(error_pipe[0]);
      return Status::IoError(std::string("spawn: fcntl(F_DUPFD_CLOEXEC): ") + std::strerror(e));
    }
  }
  int dev_null = options.stdin_from_dev_null ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    CloseFd(error_pipe[0]);
    CloseFd(error_pipe[1]);
    CloseFd(dev_null);
    return Status::IoError("spawn of '" + options.argv[0] + "': fork: " + std::strerror(e));
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only, no allocation.
    const int ep = error_pipe[1];
    if (options.new_process_group && setpgid(0, 0) != 0) ChildFail(ep, ChildSetup::kNewProcessGroup);
    if (options.die_with_parent) {
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ChildFail(ep, ChildSetup::kDieWithParent);
      if (getppid() != parent) _exit(127);  // the parent died before prctl; nobody reads
    }
    if (options.reset_signals) {
      sigset_t none;
      sigemptyset(&none);
      if (sigprocmask(SIG_SETMASK, &none, nullptr) != 0) ChildFail(ep, ChildSetup::kResetSignals);
      for (int sig : sigs_to_reset) signal(sig, SIG_DFL);
    }
    if (options.address_space_limit_bytes > 0 && setrlimit(RLIMIT_AS, &limit) != 0) {
      ChildFail(ep, ChildSetup::kAddressSpaceLimit);
    }
    if (options.cpu >= 0 && sched_setaffinity(0, sizeof(cpu_set), &cpu_set) != 0) {
      ChildFail(ep, ChildSetup::kPinToCpu);
    }
    if (options.idle_priority) {
      sched_param param{};
      param.sched_priority = 0;
      if (sched_setscheduler(0, SCHED_IDLE, &param) != 0) ChildFail(ep, ChildSetup::kIdlePriority);
    }
    if (dev_null >= 0 && dup2(dev_null, 0) != 0) ChildFail(ep, ChildSetup::kRedirectFds);
    for (size_t i = 0; i < options.fds.size(); ++i) {
      copies[i] = fcntl(options.fds[i].second, F_DUPFD_CLOEXEC, max_target + 1);
      if (copies[i] < 0) ChildFail(ep, ChildSetup::kRedirectFds);
    }
    for (size_t i = 0; i < options.fds.size(); ++i) {  // dup2 clears close-on-exec
      if (dup2(copies[i], options.fds[i].first) != options.fds[i].first) ChildFail(ep, ChildSetup::kRedirectFds);
    }
    if (options.close_other_fds) {  // the parent's sockets and pipes must not leak
      unsigned first = 3;
      for (int fd : kept) {
        if (static_cast<unsigned>(fd) > first) CloexecRange(first, static_cast<unsigned>(fd) - 1);
        first = static_cast<unsigned>(fd) + 1;
      }
      CloexecRange(first, ~0U);
    }
    if (options.stop_before_exec && kill(getpid(), SIGSTOP) != 0) ChildFail(ep, ChildSetup::kStopBeforeExec);
    execve(argv.get()[0], argv.get(), envp ? envp->get() : environ);
    ChildFail(ep, ChildSetup::kExec);
  }

  // Parent.
  CloseFd(error_pipe[1]);
  CloseFd(dev_null);
  if (options.new_process_group) setpgid(pid, pid);  // also here, so the group exists at once
  ChildError e{};
  ssize_t n = 0;
  if (options.stop_before_exec) {
    int status = 0;
    pid_t r;
    while ((r = waitpid(pid, &status, WUNTRACED)) < 0 && errno == EINTR) {
    }
    if (r == pid && WIFSTOPPED(status)) {
      CloseFd(error_pipe[0]);
      return pid;
    }
    while ((n = read(error_pipe[0], &e, sizeof(e))) < 0 && errno == EINTR) {
    }
    CloseFd(error_pipe[0]);
    if (n == sizeof(e)) return Status::IoError("spawn of '" + options.argv[0] + "': " + StepFailure(e, options));
    return Status::IoError("spawn of '" + options.argv[0] + "': the child exited before exec");
  }
  while ((n = read(error_pipe[0], &e, sizeof(e))) < 0 && errno == EINTR) {
  }
  CloseFd(error_pipe[0]);
  if (n != sizeof(e)) return pid;  // EOF: exec closed the pipe
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  const std::string message = "spawn of '" + options.argv[0] + "': " + StepFailure(e, options);
  if (e.step == ChildSetup::kExec && (e.err == ENOENT || e.err == EACCES)) return Status::NotFound(message);
  return Status::IoError(message);
}

}  // namespace pw
