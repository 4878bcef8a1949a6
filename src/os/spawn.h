// Spawn: fork + exec of one child process with its confinement applied in
// the child before exec — the one place pipewright starts processes (the
// local launcher's ranks, the side-task processes).
//
// The parent may be multithreaded (LibTorch pools, Gloo), so everything the
// child needs (argv, envp, cpu set, fd table) is built before fork, and the
// child makes only async-signal-safe calls between fork and exec. The setup
// steps run in the order of ChildSetup below; a step that fails in the child
// is reported to the parent over a close-on-exec pipe (which step, errno),
// and Spawn returns an error naming it — the child has then been reaped.
//
// No signal handlers are installed and no global state is kept.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace pw {

// The child's setup steps, in the order they run; the name of the one that
// failed is in Spawn's error.
enum class ChildSetup : uint8_t {
  kNewProcessGroup,    // setpgid(0, 0): signals to the group reach what it starts
  kDieWithParent,      // PR_SET_PDEATHSIG = SIGKILL (follows the forking *thread*)
  kResetSignals,       // empty signal mask; default TERM INT PIPE HUP QUIT CHLD
  kAddressSpaceLimit,  // setrlimit(RLIMIT_AS)
  kPinToCpu,           // sched_setaffinity to one cpu
  kIdlePriority,       // sched_setscheduler(SCHED_IDLE)
  kRedirectFds,        // stdin from /dev/null, dup2 of SpawnOptions::fds
  kCloseOtherFds,      // every other fd >= 3 close-on-exec (nothing leaks)
  kStopBeforeExec,     // SIGSTOP itself: nothing of the program runs before SIGCONT
  kExec,               // execve
};

// "setrlimit(RLIMIT_AS)", "sched_setaffinity", "exec", ...
const char* ChildSetupName(ChildSetup step);

struct SpawnOptions {
  // argv[0] is the program's path (no PATH search: see FindExecutable).
  std::vector<std::string> argv;
  // The child's environment, "KEY=value"; nullopt: this process's.
  std::optional<std::vector<std::string>> env;

  bool new_process_group = false;
  bool die_with_parent = false;
  bool reset_signals = false;
  int64_t address_space_limit_bytes = 0;  // 0: none
  int cpu = -1;                           // -1: no pinning
  bool idle_priority = false;
  bool stdin_from_dev_null = false;
  // {child fd, parent fd}: the parent's fd appears as the child's (dup2;
  // without close-on-exec). Child fds 0, 1, 2 or above; sources may be
  // close-on-exec and may collide with other targets (handled).
  std::vector<std::pair<int, int>> fds;
  bool close_other_fds = true;
  // Spawn returns once the child stopped itself, before exec; SIGCONT runs
  // the program. An exec failure after that shows as exit code 127.
  bool stop_before_exec = false;
};

// Starts the child and returns its pid (the caller reaps it with waitpid).
// Blocks until the child has exec'd, failed a setup step, or (with
// stop_before_exec) stopped itself — milliseconds. Errors (no child is left):
//   InvalidArgument  empty argv, cpu outside [0, CPU_SETSIZE)
//   IoError          pipe / fork failed, or a setup step failed in the child:
//                    "spawn of '<argv[0]>': <step name> failed in the child:
//                    <errno text>"
//   NotFound         exec failed with ENOENT / EACCES (no such program)
// When a setup step failed in the child and `failed_step` is not null, the
// step is stored there (callers explain a step's failure without parsing
// the message); otherwise it is left as it was.
// Any thread may call it; concurrent calls are independent.
Result<pid_t> Spawn(const SpawnOptions& options, std::optional<ChildSetup>* failed_step = nullptr);

// Finds `name` the way execvp would (PATH when the name has no '/'; only
// executable files). nullopt when none is found. Reads the environment.
std::optional<std::string> FindExecutable(const std::string& name);

}  // namespace pw
