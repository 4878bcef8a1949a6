// TaskProcess: a side task running in its own process, as seen from the
// training rank that hosts it. A side task that crashes, hangs or exceeds
// its memory never harms training: it is a separate process with
//   - the lowest CPU priority (SCHED_IDLE),
//   - the rank's core (sched_setaffinity to `cpu`),
//   - an address-space limit (RLIMIT_AS = memory_limit_bytes); exceeding it
//     makes the task fail, and the failure is reported (state STOPPED with
//     the reason), never propagated to the rank.
//
// Iterative tasks run `host_binary side-task host ...` (harvest/task_host.h)
// and talk over a socketpair (SOCK_SEQPACKET): the rank sends Resume(budget)
// / Pause() without blocking; the host acks each pause after its current
// step ends, and reports progress. Imperative tasks run `sh -c COMMAND` and
// are paused with SIGSTOP and resumed with SIGCONT (to the process group).
//
// Thread-safety: Resume/Pause are called from the rank's executor thread
// (inside IdleListener callbacks) and must not block; Poll/Stop/progress
// from one other thread (the manager's) — the class synchronises them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "harvest/side_task.h"

namespace pw {

struct TaskProcessOptions {
  std::string host_binary = "/proc/self/exe";  // the pipewright binary
  int cpu = -1;                    // core to pin to (-1: no pinning)
  int64_t memory_limit_bytes = 0;  // RLIMIT_AS (0: none)
  bool idle_priority = true;       // SCHED_IDLE
  bool start_paused = true;        // gated policy; false: runs freely (idle-only policy)
  double step_margin = 1.2;        // a step starts only if remaining > margin * step time
  double setup_timeout_s = 300;    // Start fails if Setup takes longer
};

struct TaskProcessReport {
  SideTaskState state = SideTaskState::kSubmitted;
  std::string failure;             // why it stopped, when it failed
  int64_t steps = 0;
  double work = 0;
  std::string unit;
  double run_seconds = 0;          // wall time spent RUNNING
  int64_t pauses = 0;
  double pause_latency_mean_us = 0, pause_latency_max_us = 0;  // Pause() -> task stopped
  double step_us = 0;              // iterative: the host's step time (EWMA, incl. calibration)
  double unacked_pause_us = 0;     // iterative: how long the last Pause() has waited for its ack
                                   // (0 when acked) — a hung step shows here; Stop() it
};

class TaskProcess {
 public:
  // Starts the process (PAUSED unless !start_paused). Blocks until the host
  // finished Setup and two calibration steps, which count in the progress
  // (iterative), or the process exists (imperative; spec.name "cmd" or a
  // non-empty spec.command). Call it from a thread that lives as long as
  // the task: PR_SET_PDEATHSIG fires when the forking *thread* exits.
  // IoError / FailedPrecondition with the task's own message on failure.
  static Result<std::unique_ptr<TaskProcess>> Start(const SideTaskSpec& spec,
                                                    const TaskProcessOptions& options);
  ~TaskProcess();  // Stop()s

  // Non-blocking. Resume: the rank is idle for about `budget_us` from now
  // (<= 0: unknown — run steps until paused). Pause: the bubble ended.
  void Resume(double budget_us);
  void Pause();

  // Collects acks and progress without blocking; returns the latest report.
  TaskProcessReport Poll();
  // Finishes (iterative: Finish(), then exit) or kills the task; waits at
  // most `grace_ms` and then SIGKILLs. Returns the final report.
  TaskProcessReport Stop(int grace_ms = 2000);
  pid_t pid() const;

 private:
  struct Impl;
  explicit TaskProcess(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pw
