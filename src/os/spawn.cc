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

#include "os/pipe.h"

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

// Everything the child needs, built before fork: after fork only
// async-signal-safe calls may run.
struct ChildPlan {
  explicit ChildPlan(const SpawnOptions& options) : argv(options.argv) {
    if (options.env) envp.emplace(*options.env);
    CPU_ZERO(&cpu_set);
    if (options.cpu >= 0) CPU_SET(options.cpu, &cpu_set);
    limit = {static_cast<rlim_t>(options.address_space_limit_bytes),
             static_cast<rlim_t>(options.address_space_limit_bytes)};
    copies.assign(options.fds.size(), -1);
  }

  // The child's kept descriptors >= 3, ascending: the gaps between them are
  // marked close-on-exec. Sources are first copied above every target, so a
  // source that is also another mapping's target is not overwritten.
  Status PlanDescriptors(const SpawnOptions& options) {
    for (const auto& [target, source] : options.fds) {
      if (target < 0 || source < 0) return Status::InvalidArgument("spawn: negative descriptor in fds");
      max_target = std::max(max_target, target);
      if (target >= 3) kept.push_back(target);
    }
    std::sort(kept.begin(), kept.end());
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    return Status::Ok();
  }

  CStringArray argv;
  std::optional<CStringArray> envp;
  cpu_set_t cpu_set;
  rlimit limit{};
  std::vector<int> kept;
  int max_target = 2;
  std::vector<int> copies;
};

// Child only: the descriptor steps (stdin, dup2 of the mappings, the rest
// close-on-exec).
void RedirectChildFds(const SpawnOptions& options, ChildPlan& plan, int dev_null, int ep) {
  if (dev_null >= 0 && dup2(dev_null, 0) != 0) ChildFail(ep, ChildSetup::kRedirectFds);
  for (size_t i = 0; i < options.fds.size(); ++i) {
    plan.copies[i] = fcntl(options.fds[i].second, F_DUPFD_CLOEXEC, plan.max_target + 1);
    if (plan.copies[i] < 0) ChildFail(ep, ChildSetup::kRedirectFds);
  }
  for (size_t i = 0; i < options.fds.size(); ++i) {  // dup2 clears close-on-exec
    if (dup2(plan.copies[i], options.fds[i].first) != options.fds[i].first) ChildFail(ep, ChildSetup::kRedirectFds);
  }
  if (options.close_other_fds) {  // the parent's sockets and pipes must not leak
    unsigned first = 3;
    for (int fd : plan.kept) {
      if (static_cast<unsigned>(fd) > first) CloexecRange(first, static_cast<unsigned>(fd) - 1);
      first = static_cast<unsigned>(fd) + 1;
    }
    CloexecRange(first, ~0U);
  }
}

// Child only: runs the setup steps in ChildSetup's order, then exec.
// Async-signal-safe calls only, no allocation.
[[noreturn]] void RunChild(const SpawnOptions& options, ChildPlan& plan, int dev_null, int ep, pid_t parent) {
  if (options.new_process_group && setpgid(0, 0) != 0) ChildFail(ep, ChildSetup::kNewProcessGroup);
  if (options.die_with_parent) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ChildFail(ep, ChildSetup::kDieWithParent);
    if (getppid() != parent) _exit(127);  // the parent died before prctl; nobody reads
  }
  if (options.reset_signals) {
    sigset_t none;
    sigemptyset(&none);
    if (sigprocmask(SIG_SETMASK, &none, nullptr) != 0) ChildFail(ep, ChildSetup::kResetSignals);
    for (int sig : {SIGTERM, SIGINT, SIGPIPE, SIGHUP, SIGQUIT, SIGCHLD}) signal(sig, SIG_DFL);
  }
  if (options.address_space_limit_bytes > 0 && setrlimit(RLIMIT_AS, &plan.limit) != 0) {
    ChildFail(ep, ChildSetup::kAddressSpaceLimit);
  }
  if (options.cpu >= 0 && sched_setaffinity(0, sizeof(plan.cpu_set), &plan.cpu_set) != 0) {
    ChildFail(ep, ChildSetup::kPinToCpu);
  }
  if (options.idle_priority) {
    sched_param param{};
    param.sched_priority = 0;
    if (sched_setscheduler(0, SCHED_IDLE, &param) != 0) ChildFail(ep, ChildSetup::kIdlePriority);
  }
  RedirectChildFds(options, plan, dev_null, ep);
  if (options.stop_before_exec && kill(getpid(), SIGSTOP) != 0) ChildFail(ep, ChildSetup::kStopBeforeExec);
  execve(plan.argv.get()[0], plan.argv.get(), plan.envp ? plan.envp->get() : environ);
  ChildFail(ep, ChildSetup::kExec);
}

// Reads the child's report from the error pipe: EOF means exec worked.
ssize_t ReadChildError(const UniqueFd& error_read, ChildError& e) {
  ssize_t n = 0;
  while ((n = read(error_read.get(), &e, sizeof(e))) < 0 && errno == EINTR) {
  }
  return n;
}

// Parent: waits for the child to exec, fail a step or (stop_before_exec)
// stop itself; reaps it on failure.
Result<pid_t> AwaitChild(pid_t pid, UniqueFd error_read, const SpawnOptions& options,
                         std::optional<ChildSetup>* failed_step) {
  ChildError e{};
  if (options.stop_before_exec) {
    int status = 0;
    pid_t r;
    while ((r = waitpid(pid, &status, WUNTRACED)) < 0 && errno == EINTR) {
    }
    if (r == pid && WIFSTOPPED(status)) return pid;
    const ssize_t n = ReadChildError(error_read, e);
    if (n == sizeof(e) && failed_step != nullptr) *failed_step = e.step;
    if (n == sizeof(e)) return Status::IoError("spawn of '" + options.argv[0] + "': " + StepFailure(e, options));
    return Status::IoError("spawn of '" + options.argv[0] + "': the child exited before exec");
  }
  if (ReadChildError(error_read, e) != sizeof(e)) return pid;  // EOF: exec closed the pipe
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (failed_step != nullptr) *failed_step = e.step;
  const std::string message = "spawn of '" + options.argv[0] + "': " + StepFailure(e, options);
  if (e.step == ChildSetup::kExec && (e.err == ENOENT || e.err == EACCES)) return Status::NotFound(message);
  return Status::IoError(message);
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

Result<pid_t> Spawn(const SpawnOptions& options, std::optional<ChildSetup>* failed_step) {
  if (options.argv.empty()) return Status::InvalidArgument("spawn: no program (empty argv)");
  if (options.cpu >= CPU_SETSIZE) {
    return Status::InvalidArgument("spawn: cpu " + std::to_string(options.cpu) + " is beyond CPU_SETSIZE (" +
                                   std::to_string(CPU_SETSIZE) + ")");
  }
  ChildPlan plan(options);
  PW_RETURN_IF_ERROR(plan.PlanDescriptors(options));

  Result<Pipe> error_pipe = Pipe::Create("spawn's error report");
  if (!error_pipe.ok()) return Status::IoError("spawn: " + error_pipe.status().message());
  if (error_pipe->write_end.get() <= plan.max_target) {  // no target may overwrite it in the child
    const int moved = fcntl(error_pipe->write_end.get(), F_DUPFD_CLOEXEC, plan.max_target + 1);
    const int e = errno;
    error_pipe->write_end.Reset(moved);
    if (moved < 0) return Status::IoError(std::string("spawn: fcntl(F_DUPFD_CLOEXEC): ") + std::strerror(e));
  }
  UniqueFd dev_null(options.stdin_from_dev_null ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1);

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    return Status::IoError("spawn of '" + options.argv[0] + "': fork: " + std::strerror(e));
  }
  if (pid == 0) RunChild(options, plan, dev_null.get(), error_pipe->write_end.get(), parent);

  error_pipe->write_end.Reset();
  dev_null.Reset();
  if (options.new_process_group) setpgid(pid, pid);  // also here, so the group exists at once
  return AwaitChild(pid, std::move(error_pipe->read_end), options, failed_step);
}

}  // namespace pw
