// TaskProcess (harvest/task_process.h): fork + exec of a side-task host or
// of `sh -c COMMAND`, confined (own process group, SCHED_IDLE, one core,
// RLIMIT_AS, dies with the rank), driven without blocking the rank.
//
// This file holds what both kinds share: spawning, signalling against
// reaping, reaping, output, the report and stopping. How each kind is
// started, paused, resumed and watched is its TaskRunner's
// (harvest/task_runners.h: HostRunner, CommandRunner).
//
// Misbehaviour is contained here too: output goes through a drained,
// rate-limited pipe (TaskOutput); an ignored pause becomes a SIGSTOP; a
// command whose process group outgrows the memory limit is killed.
//
// Between fork and exec the child only makes async-signal-safe calls: the
// rank is multithreaded (Gloo, LibTorch pools), so everything the child
// needs (argv, cpu set) is built before fork. A setup call that fails in
// the child is reported through a close-on-exec pipe (EOF = exec worked).
#include "harvest/task_process.h"

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "core/units.h"
#include "harvest/task_host.h"
#include "harvest/task_output.h"
#include "harvest/task_runners.h"
#include "os/cpu.h"
#include "os/fd_io.h"
#include "os/process.h"
#include "os/signals.h"
#include "os/spawn.h"
#include "os/unique_fd.h"

namespace pw {
namespace {

// The cpu is the one thing both kinds check before spawning; the runner
// checks the rest (MakeTaskRunner).
Status CheckCpu(const TaskProcessOptions& options) {
  const int cpus = ConfiguredCpuCount();
  if (options.cpu >= CPU_SETSIZE || options.cpu >= cpus) {
    return Status::InvalidArgument("side task cpu " + std::to_string(options.cpu) + ": this machine has " +
                                   std::to_string(cpus) + " cpus (0-" + std::to_string(cpus - 1) + ")");
  }
  return Status::Ok();
}

// The task's confinement (TaskProcess's header); the runner adds the
// program, and the caller the fds.
SpawnOptions TaskSpawnOptions(const TaskProcessOptions& options) {
  SpawnOptions spawn;
  if (options.memory_limit_bytes > 0) {
    // The task is told its budget: a well-behaved program sizes itself to it.
    constexpr std::string_view kMemoryVariable = "PIPEWRIGHT_TASK_MEMORY_BYTES=";
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      if (!std::string_view(*e).starts_with(kMemoryVariable)) env.emplace_back(*e);
    }
    env.push_back(std::string(kMemoryVariable) + std::to_string(options.memory_limit_bytes));
    spawn.env = std::move(env);
  }
  spawn.new_process_group = true;
  spawn.die_with_parent = true;
  spawn.reset_signals = true;
  spawn.address_space_limit_bytes = options.memory_limit_bytes;
  spawn.cpu = options.cpu;
  spawn.idle_priority = options.idle_priority;
  return spawn;
}

// This process's stderr, each line prefixed "[side task NAME] ".
TaskOutput::Sink StderrSink(const std::string& name) {
  return [prefix = "[side task " + name + "] "](const std::string& line) {
    const std::string text = prefix + line + "\n";
    WriteStderrAtomically(text);  // one write: lines stay whole
  };
}

}  // namespace

struct TaskProcess::Impl {
  SideTaskSpec spec;
  TaskProcessOptions options;
  TaskGroup group;
  std::unique_ptr<TaskRunner> runner;  // after options and group: it refers to them

  // Manager side.
  std::mutex mu;
  TaskProcessReport report;
  bool stop_requested = false;
  std::unique_ptr<TaskOutput> output;

  void CopyOutputStats() {
    report.output_bytes = output->stats().bytes;
    report.output_lines_held_back = output->stats().lines_held_back;
  }

  // Reaps the process if it exited (the group's stragglers are killed
  // first, while the zombie leader still holds the pgid). True if gone.
  bool CheckExit(bool block) {
    if (group.gone.load()) return true;
    const std::optional<ChildEnd> end = PeekChildEnd(group.pid, block);
    if (!end) return false;
    {
      std::lock_guard<std::mutex> lock(group.kill_mu);
      SignalProcessGroup(group.pid, SIGKILL);
      ReapChild(group.pid);
      group.gone.store(true);
    }
    runner->Drain(report);  // a FAILED sent just before exiting
    if (output) {
      output->Drain(MonotonicNs(), /*final=*/true);
      CopyOutputStats();
    }
    Conclude(end->code, end->value);
    return true;
  }

  void Conclude(int code, int value) {
    const ExitAccount exit = runner->AccountExit(code, value, report);
    const bool clean = code == CLD_EXITED && value == 0;
    std::string why = exit.why;
    if (stop_requested) {
      // Removed: our own SIGTERM/SIGKILL or a clean exit is no failure.
      if (report.state != SideTaskState::kFinished) report.state = SideTaskState::kStopped;
      if (code == CLD_EXITED && value != 0) report.failure = why;
      return;
    }
    if (clean && (exit.clean_exit_finishes || report.state == SideTaskState::kFinished)) {
      report.state = SideTaskState::kFinished;
      return;
    }
    report.state = SideTaskState::kStopped;
    if (options.memory_limit_bytes > 0 && exit.memory_limit_may_explain) {
      why += " (its memory limit was " + std::to_string(options.memory_limit_bytes) + " bytes, " +
             FormatBytes(static_cast<double>(options.memory_limit_bytes)) + ")";
    }
    if (exit.quote_last_output && output && !output->tail().empty()) why += "; its last output: " + output->tail().back();
    report.failure = why.rfind(spec.name, 0) == 0 ? why : spec.name + ": " + why;
  }
};

TaskProcess::TaskProcess(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TaskProcess::~TaskProcess() {
  if (!impl_) return;
  Stop();  // Impl's destructor closes the runner's socket
}

pid_t TaskProcess::pid() const { return impl_->group.pid; }

Result<std::unique_ptr<TaskProcess>> TaskProcess::Start(const SideTaskSpec& spec, const TaskProcessOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->spec = spec;
  impl->options = options;
  PW_ASSIGN_OR_RETURN(impl->runner, MakeTaskRunner(spec, impl->options, impl->group));
  PW_RETURN_IF_ERROR(CheckCpu(options));
  if (impl->spec.name.empty()) impl->spec.name = "cmd";  // only a command may be unnamed: MakeTaskRunner refuses the rest
  SpawnOptions spawn = TaskSpawnOptions(options);
  TaskOutput::Sink sink = options.output_sink ? options.output_sink : StderrSink(impl->spec.name);
  PW_ASSIGN_OR_RETURN(impl->output, TaskOutput::Create(TaskOutputOptions{}, std::move(sink)));
  spawn.fds = {{STDOUT_FILENO, impl->output->write_fd()}, {STDERR_FILENO, impl->output->write_fd()}};
  PW_ASSIGN_OR_RETURN(UniqueFd child_end, impl->runner->Prepare(spawn));  // closed here once spawned
  std::optional<ChildSetup> failed_step;
  Result<pid_t> pid = Spawn(spawn, &failed_step);
  child_end.Reset();
  impl->output->CloseWriteEnd();
  if (!pid.ok()) {
    std::string what = pid.status().message();
    if (options.cpu >= 0 && failed_step == ChildSetup::kPinToCpu) what += " (the cpu is not available to this process)";
    return Status::FailedPrecondition("side task '" + impl->runner->Describe() + "' did not start: " + what);
  }
  impl->group.pid = *pid;
  Impl* d = impl.get();
  PW_RETURN_IF_ERROR(d->runner->AwaitStart(d->report, [d](bool block) { return d->CheckExit(block); }));
  std::unique_ptr<TaskProcess> process(new TaskProcess(std::move(impl)));
  if (!options.start_paused) d->runner->RunFreely(MonotonicNs());
  return process;
}

void TaskProcess::Resume(double budget_us) {
  Impl& d = *impl_;
  if (d.group.gone.load()) return;
  d.runner->Resume(MonotonicNs(), budget_us);
}

void TaskProcess::Pause() {
  Impl& d = *impl_;
  if (d.group.gone.load()) return;
  d.runner->Pause(MonotonicNs());
}

TaskProcessReport TaskProcess::Poll() {
  Impl& d = *impl_;
  std::lock_guard<std::mutex> lock(d.mu);
  if (!d.group.gone.load()) {
    d.runner->Poll(d.report);
    d.output->Drain(MonotonicNs());
    d.CopyOutputStats();
    d.CheckExit(/*block=*/false);
  }
  return d.report;
}

TaskProcessReport TaskProcess::Stop(int grace_ms) {
  Impl& d = *impl_;
  std::lock_guard<std::mutex> lock(d.mu);
  if (d.group.gone.load()) return d.report;
  d.stop_requested = true;
  d.runner->RequestStop();
  const int64_t deadline = MonotonicNs() + int64_t{grace_ms} * 1'000'000;
  while (!d.CheckExit(/*block=*/false)) {
    if (MonotonicNs() > deadline) {
      d.group.Signal(SIGKILL);
      d.CheckExit(/*block=*/true);
      break;
    }
    d.runner->Drain(d.report);
    d.output->Drain(MonotonicNs());  // a task that floods while stopping must not block its exit
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return d.report;
}

}  // namespace pw
