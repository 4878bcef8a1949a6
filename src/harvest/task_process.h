// TaskProcess: a side task running in its own process, as seen from the
// training rank that hosts it. A side task that crashes, hangs or exceeds
// its memory never harms training: it is a separate process with
//   - the lowest CPU priority (SCHED_IDLE),
//   - the rank's core (sched_setaffinity to `cpu`),
//   - an address-space limit (RLIMIT_AS = memory_limit_bytes, also in its
//     environment as PIPEWRIGHT_TASK_MEMORY_BYTES); exceeding it
//     makes the task fail, and the failure is reported (state STOPPED with
//     the reason), never propagated to the rank. RLIMIT_AS binds each
//     process alone, so for a command task the whole process group's
//     private memory is also checked (every group_check_interval_ms) and
//     the group killed when it passes the limit;
//   - its stdout and stderr in a pipe the manager drains (harvest/
//     task_output.h): a flood is rate-limited and counted, never the job's;
//   - pauses it cannot ignore: an iterative task whose current step has not
//     acknowledged a pause after force_pause_after_ms is stopped with
//     SIGSTOP (counted in forced_pauses; in stalled_pauses when no step
//     ended since the previous one) and continued at the next Resume.
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
#include <functional>
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
  // An unacknowledged pause older than this is enforced with SIGSTOP
  // (0: max(50 ms, 4 x the task's step time)).
  double force_pause_after_ms = 0;
  double group_check_interval_ms = 500;  // command tasks with a memory limit
  // Receives each forwarded line of the task's output (rate-limited); null:
  // this process's stderr, prefixed "[side task NAME] ".
  std::function<void(const std::string& line)> output_sink;
};

struct TaskProcessReport {
  SideTaskState state = SideTaskState::kSubmitted;
  std::string failure;             // why it stopped, when it failed
  int64_t steps = 0;               // iterative: runs of the task, whole steps and parts of one
  int64_t partial_steps = 0;       // ... of them parts of a step (SideTask::StepPart)
  double work = 0;
  std::string unit;
  double run_seconds = 0;          // wall time spent RUNNING
  int64_t pauses = 0;
  double pause_latency_mean_us = 0, pause_latency_max_us = 0;  // Pause() -> task stopped
  double step_us = 0;              // iterative: the host's step time (EWMA, incl. calibration)
  double unacked_pause_us = 0;     // iterative: how long the last Pause() has waited for its ack
                                   // (0 when acked) — a hung step shows here; Stop() it
  // Misbehaviour, contained and counted.
  int64_t forced_pauses = 0;       // pauses enforced with SIGSTOP (the step had not ended in time;
                                   // a starved step, at idle priority while the rank computes, too)
  int64_t stalled_pauses = 0;      // ... of them with no step ended since the previous one: a step
                                   // that does not end when it gets the CPU (misbehaviour)
  int64_t output_bytes = 0;        // stdout + stderr written
  int64_t output_lines_held_back = 0;  // over the output rate, not forwarded
  int processes_max = 0;           // command tasks: most processes seen in its group
  int64_t private_max_bytes = 0;   // ... and their largest summed private memory (os/process_stats.h)
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
