// Internal to harvest/task_process.cc: the two ways a side-task process is
// driven, behind one interface. TaskProcess owns what every task process
// shares (spawning, the pid, signalling against reaping, output, the
// report, stopping with a grace period); a TaskRunner owns what differs:
//   - HostRunner: a built-in (iterative) task in `pipewright side-task host`,
//     driven by messages over a SOCK_SEQPACKET control socket (READY
//     handshake, RESUME/PAUSE and their acks, SIGSTOP when a pause is ignored);
//   - CommandRunner: `sh -c COMMAND`, paused with SIGSTOP and resumed with
//     SIGCONT of its process group, its run time measured between Resume and
//     Pause, its pauses observed in /proc, its group's memory checked.
//
// Thread-safety (TaskProcess's contract): Resume/Pause run on the rank's
// executor thread and must not block; every other method runs on the
// manager's thread (or in Start, before any other thread sees the task),
// under TaskProcess's mutex. The state both threads touch is atomic, and
// signals to the group go through TaskGroup's kill_mu.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"
#include "harvest/side_task.h"
#include "harvest/task_process.h"
#include "os/spawn.h"
#include "os/unique_fd.h"

namespace pw {

// The task's process group, as both threads see it.
struct TaskGroup {
  pid_t pid = -1;
  // Guards signalling the group against reaping it (the pgid could be reused).
  std::mutex kill_mu;
  std::atomic<bool> gone{false};

  // Signals the whole group unless it was reaped. Takes kill_mu.
  void Signal(int sig);
};

// How a runner explains its process's end; TaskProcess composes the failure.
struct ExitAccount {
  std::string why;                 // the task's own reason, else the exit status or signal ("" for exit 0)
  bool clean_exit_finishes = false;  // exit 0 alone means FINISHED (else the task must have said so)
  bool memory_limit_may_explain = false;  // worth naming the memory limit beside `why`
  bool quote_last_output = false;  // the task's last output line says more than its status
};

class TaskRunner {
 public:
  TaskRunner(const TaskProcessOptions& options, TaskGroup& group) : options_(options), group_(group) {}
  virtual ~TaskRunner() = default;

  // Before the spawn: the program and what else the child needs in `spawn`.
  // Returns the child's ends of anything passed to it, which the caller
  // closes once spawned. IoError when a resource could not be made.
  virtual Result<UniqueFd> Prepare(SpawnOptions& spawn) = 0;
  // What the task is, for "did not start" messages.
  virtual std::string Describe() const = 0;
  // Blocks until the task can be driven; `check_exit(block)` reaps the
  // process (true when gone, and `report` concluded). FailedPrecondition
  // with the reason when it did not start.
  virtual Status AwaitStart(TaskProcessReport& report, const std::function<bool(bool block)>& check_exit) = 0;
  // start_paused = false: the task runs from the start, with no budget.
  virtual void RunFreely(int64_t now) = 0;

  // Executor thread; non-blocking. The group is not known gone.
  virtual void Resume(int64_t now, double budget_us) = 0;
  virtual void Pause(int64_t now) = 0;

  // Manager thread. Poll: collects acks, progress and pauses without blocking
  // into `report`, and enforces what the runner polices.
  virtual void Poll(TaskProcessReport& report) = 0;
  // Asks the task to end (TaskProcess::Stop then waits, then SIGKILLs).
  virtual void RequestStop() = 0;
  // Reads whatever the task reported and is queued. Never blocks.
  virtual void Drain(TaskProcessReport& report) = 0;
  // The process was reaped: final counts into `report`, and its end explained.
  virtual ExitAccount AccountExit(int code, int value, TaskProcessReport& report) = 0;

 protected:
  // Pause() -> task stopped, into the report's pause counts. Manager thread.
  void RecordPause(TaskProcessReport& report, int64_t latency_ns);

  const TaskProcessOptions& options_;
  TaskGroup& group_;
  // Written by Resume/Pause on the executor thread.
  std::atomic<bool> want_running_{false};
  std::atomic<uint32_t> pause_seq_{0};
  std::atomic<int64_t> pause_ns_{0};  // when the last Pause signalled / was sent

 private:
  double latency_sum_us_ = 0;  // manager side
};


// The runner for `spec`, after the checks that need nothing spawned (the
// command line, or the built-in spec and the host binary). `options` and
// `group` must outlive it. InvalidArgument / NotFound on a bad task.
Result<std::unique_ptr<TaskRunner>> MakeTaskRunner(const SideTaskSpec& spec, const TaskProcessOptions& options,
                                                   TaskGroup& group);

}  // namespace pw
