// TaskProcess (harvest/task_process.h): fork + exec of a side-task host or
// of `sh -c COMMAND`, confined (own process group, SCHED_IDLE, one core,
// RLIMIT_AS, dies with the rank), driven without blocking the rank.
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
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "core/units.h"
#include "harvest/task_host.h"
#include "harvest/task_output.h"
#include "os/cpu.h"
#include "os/poll.h"
#include "os/process_stats.h"
#include "os/signals.h"
#include "os/socket.h"
#include "os/spawn.h"
#include "os/unique_fd.h"

namespace pw {
namespace {

constexpr int kControlFd = 3;  // the host's end of the socket, in the child

std::string SignalText(int sig) {
  return "killed by signal " + std::to_string(sig) + " (" + SignalDescription(sig) + ")";
}

// The state letter of `pid` in /proc, or 0 when it is gone.
char ProcState(pid_t pid) {
  const std::optional<ProcessStat> stat = ReadProcessStat(pid);
  return stat ? stat->state : 0;
}

// A command (`sh -c`, paused by signals) rather than a built-in task in a
// side-task host (paused by messages).
bool IsCommandTask(const SideTaskSpec& spec) { return spec.name == "cmd" || !spec.command.empty(); }

// What can be checked before anything is spawned: the command line or the
// built-in spec, the host binary, the cpu.
Status CheckStartable(const SideTaskSpec& spec, const TaskProcessOptions& options) {
  if (IsCommandTask(spec) && spec.command.empty()) {
    return Status::InvalidArgument("side task 'cmd': no command line given (--side-task-cmd \"COMMAND\")");
  }
  if (!IsCommandTask(spec)) {
    PW_RETURN_IF_ERROR(MakeBuiltinSideTask(spec).status());  // bad specs fail here, not in the child
    if (access(options.host_binary.c_str(), X_OK) != 0) {
      return Status::NotFound("side-task host binary '" + options.host_binary + "' is not executable: " +
                              std::strerror(errno));
    }
  }
  const int cpus = ConfiguredCpuCount();
  if (options.cpu >= CPU_SETSIZE || options.cpu >= cpus) {
    return Status::InvalidArgument("side task cpu " + std::to_string(options.cpu) + ": this machine has " +
                                   std::to_string(cpus) + " cpus (0-" + std::to_string(cpus - 1) + ")");
  }
  return Status::Ok();
}

// The task's program and its confinement (TaskProcess's header); the
// caller adds the fds.
SpawnOptions TaskSpawnOptions(const SideTaskSpec& spec, const TaskProcessOptions& options) {
  SpawnOptions spawn;
  if (IsCommandTask(spec)) {
    spawn.argv = {"/bin/sh", "-c", spec.command};
  } else {
    SideTaskHostArgs host_args{FormatSideTaskSpec(spec), kControlFd, options.step_margin};
    spawn.argv = SideTaskHostArgv(host_args);
    spawn.argv.insert(spawn.argv.begin(), options.host_binary);
  }
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
  spawn.stop_before_exec = IsCommandTask(spec) && options.start_paused;  // nothing runs before Resume
  return spawn;
}

// This process's stderr, each line prefixed "[side task NAME] ".
TaskOutput::Sink StderrSink(const std::string& name) {
  return [prefix = "[side task " + name + "] "](const std::string& line) {
    const std::string text = prefix + line + "\n";
    (void)!write(STDERR_FILENO, text.data(), text.size());  // one write: lines stay whole
  };
}

}  // namespace

struct TaskProcess::Impl {
  SideTaskSpec spec;
  TaskProcessOptions options;
  bool imperative = false;
  pid_t pid = -1;
  UniqueFd control;  // iterative: the rank's end of the control socket

  // Written by Resume/Pause on the executor thread.
  std::atomic<bool> want_running{false};
  std::atomic<uint32_t> pause_seq{0};
  std::atomic<int64_t> pause_ns{0};          // when the last Pause signalled / was sent
  std::atomic<int64_t> resume_ns{0};         // iterative: time_ns of the last RESUME (resends keep the deadline)
  std::atomic<double> resume_budget_us{0};
  std::atomic<bool> send_failed{false};
  std::atomic<int64_t> run_ns_total{0};      // imperative: time between Resume and Pause
  std::atomic<int64_t> running_since_ns{0};
  // Guards signalling the group against reaping it (the pgid could be reused).
  std::mutex kill_mu;
  std::atomic<bool> gone{false};
  // Set (under kill_mu) when Poll stopped the group for an ignored pause;
  // the next Resume continues it.
  std::atomic<bool> force_stopped{false};

  // Manager side.
  std::mutex mu;
  TaskProcessReport report;
  std::string host_failure;                  // the host's FAILED text
  HostFailure host_failure_kind = HostFailure::kNone;
  bool stop_requested = false;
  bool ready = false;                        // iterative: READY received
  uint32_t observed_pause_seq = 0;           // imperative: last pause whose stop was seen
  uint32_t acked_pause_seq = 0;              // iterative: last pause the host acknowledged
  double latency_sum_us = 0;
  std::unique_ptr<TaskOutput> output;
  int64_t group_checked_ns = 0;
  std::string memory_exceeded;               // why the group was killed, when it was
  int64_t steps_at_forced_pause = 0;         // report.steps at the last forced pause

  void Signal(int sig) {
    std::lock_guard<std::mutex> lock(kill_mu);
    if (!gone.load()) SignalProcessGroup(pid, sig);
  }

  void SendControl(HostMessage m) {
    if (send(control.get(), &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(m)) &&
        (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) {
      send_failed.store(true);  // Poll resends the latest wish
    }
  }

  void RecordPause(int64_t latency_ns) {
    const double us = static_cast<double>(latency_ns) * 1e-3;
    ++report.pauses;
    latency_sum_us += us;
    report.pause_latency_mean_us = latency_sum_us / static_cast<double>(report.pauses);
    report.pause_latency_max_us = std::max(report.pause_latency_max_us, us);
  }

  void Apply(const HostMessage& m) {
    report.steps = m.steps;
    report.partial_steps = m.partial_steps;
    report.work = m.work;
    report.run_seconds = m.run_seconds;
    report.step_us = m.step_us;
    switch (m.type) {
      case HostMessageType::kReady:
        report.unit = m.text;
        report.state = SideTaskState::kPaused;
        ready = true;
        break;
      case HostMessageType::kResumed:
        if (report.state != SideTaskState::kFinished) report.state = SideTaskState::kRunning;
        break;
      case HostMessageType::kPaused:
        if (report.state != SideTaskState::kFinished) report.state = SideTaskState::kPaused;
        RecordPause(m.time_ns - m.echo_ns);
        acked_pause_seq = std::max(acked_pause_seq, m.seq);
        break;
      case HostMessageType::kFailed:
        host_failure = m.text;
        host_failure_kind = m.failure;
        break;
      case HostMessageType::kFinished:
        report.state = SideTaskState::kFinished;
        break;
      default:
        break;
    }
  }

  // Reads every queued host message. Never blocks.
  void Drain() {
    if (!control.valid()) return;
    HostMessage m;
    while (recv(control.get(), &m, sizeof(m), MSG_DONTWAIT) == static_cast<ssize_t>(sizeof(m))) Apply(m);
  }

  // Reaps the process if it exited (the group's stragglers are killed
  // first, while the zombie leader still holds the pgid). True if gone.
  bool CheckExit(bool block) {
    if (gone.load()) return true;
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG)) != 0 ||
        info.si_pid == 0) {
      return false;
    }
    {
      std::lock_guard<std::mutex> lock(kill_mu);
      SignalProcessGroup(pid, SIGKILL);
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      gone.store(true);
    }
    Drain();  // a FAILED sent just before exiting
    if (output) {
      output->Drain(MonotonicNs(), /*final=*/true);
      CopyOutputStats();
    }
    Conclude(info.si_code, info.si_status);
    return true;
  }

  void Conclude(int code, int value) {
    if (imperative) report.run_seconds = ImperativeRunSeconds();
    const bool clean = code == CLD_EXITED && value == 0;
    std::string why;
    if (!memory_exceeded.empty()) {
      why = memory_exceeded;
    } else if (code == CLD_EXITED && value != 0) {
      why = host_failure.empty() ? "exited with status " + std::to_string(value) : host_failure;
    } else if (code == CLD_KILLED || code == CLD_DUMPED) {
      why = SignalText(value);
      if (!host_failure.empty()) why = host_failure + "; " + why;
    }
    if (stop_requested) {
      // Removed: our own SIGTERM/SIGKILL or a clean exit is no failure.
      if (report.state != SideTaskState::kFinished) report.state = SideTaskState::kStopped;
      if (code == CLD_EXITED && value != 0) report.failure = why;
      return;
    }
    if (clean && (imperative || report.state == SideTaskState::kFinished)) {
      report.state = SideTaskState::kFinished;
      return;
    }
    report.state = SideTaskState::kStopped;
    if (why.empty()) why = "the side-task host exited unexpectedly";
    if (options.memory_limit_bytes > 0 && host_failure_kind != HostFailure::kOutOfMemory &&
        memory_exceeded.empty() && (code != CLD_EXITED || imperative)) {
      why += " (its memory limit was " + std::to_string(options.memory_limit_bytes) + " bytes, " +
             FormatBytes(static_cast<double>(options.memory_limit_bytes)) + ")";
    }
    if (imperative && output && !output->tail().empty()) why += "; its last output: " + output->tail().back();
    report.failure = why.rfind(spec.name, 0) == 0 ? why : spec.name + ": " + why;
  }

  void CopyOutputStats() {
    report.output_bytes = output->stats().bytes;
    report.output_lines_held_back = output->stats().lines_held_back;
  }

  // Iterative: a pause the current step has ignored for too long is
  // enforced with SIGSTOP. Under kill_mu, so a concurrent Resume either
  // sees force_stopped and continues the group, or stops Poll from acting.
  void EnforcePause(int64_t now) {
    if (force_stopped.load() || want_running.load() || pause_seq.load() <= acked_pause_seq) return;
    const double after_us = options.force_pause_after_ms > 0 ? options.force_pause_after_ms * 1e3
                                                               : std::max(50e3, 4 * report.step_us);
    if (static_cast<double>(now - pause_ns.load()) * 1e-3 < after_us) return;
    std::lock_guard<std::mutex> lock(kill_mu);
    if (gone.load() || want_running.load()) return;
    SignalProcessGroup(pid, SIGSTOP);
    force_stopped.store(true);
    ++report.forced_pauses;
    // A well-behaved step can miss the deadline when it is starved (idle
    // priority on the rank's busy core) but ends in the next bubble; a
    // step that runs through bubble after bubble is the task's fault.
    if (report.forced_pauses > 1 && report.steps == steps_at_forced_pause) ++report.stalled_pauses;
    steps_at_forced_pause = report.steps;
  }

  // Command tasks: RLIMIT_AS binds each process alone, so the group's
  // summed private memory is checked too, at a low rate (a /proc scan).
  // Private, not resident: before exec the child still maps the rank's
  // pages copy-on-write, and shared libraries are not the task's cost.
  void CheckGroupMemory(int64_t now) {
    if (!imperative || options.memory_limit_bytes <= 0 || !memory_exceeded.empty()) return;
    if (now - group_checked_ns < static_cast<int64_t>(options.group_check_interval_ms * 1e6)) return;
    group_checked_ns = now;
    const ProcessGroupUsage usage = ReadProcessGroupUsage(pid);
    report.processes_max = std::max(report.processes_max, usage.processes);
    report.private_max_bytes = std::max(report.private_max_bytes, usage.private_bytes);
    if (usage.private_bytes <= options.memory_limit_bytes) return;
    memory_exceeded = "its " + std::to_string(usage.processes) + " processes held " +
                      FormatBytes(static_cast<double>(usage.private_bytes)) + " of their own memory, over its memory limit of " +
                      FormatBytes(static_cast<double>(options.memory_limit_bytes)) + "; the process group was killed";
    Signal(SIGKILL);
  }

  double ImperativeRunSeconds() const {
    int64_t total = run_ns_total.load();
    const int64_t since = running_since_ns.load();
    if (since > 0) total += MonotonicNs() - since;
    return static_cast<double>(total) * 1e-9;
  }

  // Imperative: watches /proc for the stop of the last Pause, briefly.
  void ObservePause() {
    const uint32_t seq = pause_seq.load();
    if (seq == observed_pause_seq || want_running.load()) return;
    const int64_t give_up = MonotonicNs() + 2'000'000;
    while (true) {
      const char state = ProcState(pid);
      if (state == 'T' || state == 't') {
        const int64_t now = MonotonicNs();
        if (pause_seq.load() == seq && !want_running.load()) {
          observed_pause_seq = seq;
          RecordPause(now - pause_ns.load());
        }
        return;
      }
      if (state == 0 || state == 'Z' || MonotonicNs() > give_up) return;
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  // Iterative: blocks until the host sent READY (Setup and calibration
  // steps done), failed, exited, or took longer than setup_timeout_s; the
  // error says which. A host that did not start is reaped.
  Status WaitUntilReady() {
    const std::string what = "side task '" + FormatSideTaskSpec(spec) + "' did not start: ";
    const int64_t deadline = MonotonicNs() + static_cast<int64_t>(options.setup_timeout_s * 1e9);
    while (!ready) {
      WaitReadable(control.get(), 100);
      Drain();
      if (ready) break;
      if (CheckExit(/*block=*/false)) {
        std::string why = report.failure.empty() ? "the host exited during Setup" : report.failure;
        if (host_failure.empty() && options.memory_limit_bytes > 0) {
          // Died before it could report: typically the libraries did not fit.
          why += "; the host process alone needs about 1 GiB of address space (LibTorch, OpenCV), more than "
                 "a memory limit of " + FormatBytes(static_cast<double>(options.memory_limit_bytes)) + " may allow";
        }
        return Status::FailedPrecondition(what + why);
      }
      if (MonotonicNs() > deadline) {
        Signal(SIGKILL);
        CheckExit(/*block=*/true);
        return Status::FailedPrecondition(what + "Setup took longer than " +
                                          std::to_string(options.setup_timeout_s) + " s");
      }
    }
    return Status::Ok();
  }
};

TaskProcess::TaskProcess(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TaskProcess::~TaskProcess() {
  if (!impl_) return;
  Stop();  // Impl's destructor closes the socket
}

pid_t TaskProcess::pid() const { return impl_->pid; }

Result<std::unique_ptr<TaskProcess>> TaskProcess::Start(const SideTaskSpec& spec, const TaskProcessOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->spec = spec;
  impl->options = options;
  impl->imperative = IsCommandTask(spec);
  if (impl->imperative && impl->spec.name.empty()) impl->spec.name = "cmd";
  PW_RETURN_IF_ERROR(CheckStartable(spec, options));
  SpawnOptions spawn = TaskSpawnOptions(spec, options);
  TaskOutput::Sink sink = options.output_sink ? options.output_sink : StderrSink(impl->spec.name);
  PW_ASSIGN_OR_RETURN(impl->output, TaskOutput::Create(TaskOutputOptions{}, std::move(sink)));
  spawn.fds = {{STDOUT_FILENO, impl->output->write_fd()}, {STDERR_FILENO, impl->output->write_fd()}};
  UniqueFd host_end;  // the host's end of the control socket, closed here once spawned
  if (!impl->imperative) {
    Result<std::pair<UniqueFd, UniqueFd>> control = SocketPair(SOCK_SEQPACKET);
    if (!control.ok()) return Status::IoError("side task: " + control.status().message());
    impl->control = std::move(control->first);
    host_end = std::move(control->second);
    spawn.fds.push_back({kControlFd, host_end.get()});
  }
  std::optional<ChildSetup> failed_step;
  Result<pid_t> pid = Spawn(spawn, &failed_step);
  host_end.Reset();
  impl->output->CloseWriteEnd();
  if (!pid.ok()) {
    std::string what = pid.status().message();
    if (options.cpu >= 0 && failed_step == ChildSetup::kPinToCpu) what += " (the cpu is not available to this process)";
    return Status::FailedPrecondition("side task '" + (impl->imperative ? spec.command : FormatSideTaskSpec(spec)) +
                                      "' did not start: " + what);
  }
  impl->pid = *pid;
  if (impl->imperative) {
    impl->report.unit = "seconds";
    impl->report.state = options.start_paused ? SideTaskState::kPaused : SideTaskState::kRunning;
  } else {
    PW_RETURN_IF_ERROR(impl->WaitUntilReady());
  }
  std::unique_ptr<TaskProcess> process(new TaskProcess(std::move(impl)));
  if (!options.start_paused) {
    if (process->impl_->imperative) {
      process->impl_->want_running.store(true);
      process->impl_->running_since_ns.store(MonotonicNs());
    } else {
      process->Resume(0);
    }
  }
  return process;
}

void TaskProcess::Resume(double budget_us) {
  Impl& d = *impl_;
  if (d.gone.load()) return;
  const int64_t now = MonotonicNs();
  if (d.imperative) {
    if (d.want_running.exchange(true)) return;
    d.running_since_ns.store(now);
    d.Signal(SIGCONT);
    return;
  }
  d.want_running.store(true);
  if (d.force_stopped.load()) {
    std::lock_guard<std::mutex> lock(d.kill_mu);
    if (d.force_stopped.exchange(false) && !d.gone.load()) SignalProcessGroup(d.pid, SIGCONT);
  }
  d.resume_ns.store(now);
  d.resume_budget_us.store(budget_us);
  HostMessage m;
  m.type = HostMessageType::kResume;
  m.time_ns = now;
  m.budget_us = budget_us;
  d.SendControl(m);
}

void TaskProcess::Pause() {
  Impl& d = *impl_;
  if (d.gone.load()) return;
  const int64_t now = MonotonicNs();
  if (d.imperative) {
    if (!d.want_running.exchange(false)) return;
    d.pause_ns.store(now);
    d.Signal(SIGSTOP);
    d.pause_seq.fetch_add(1);
    const int64_t since = d.running_since_ns.exchange(0);
    if (since > 0) d.run_ns_total.fetch_add(now - since);
    return;
  }
  d.want_running.store(false);
  d.pause_ns.store(now);
  HostMessage m;
  m.type = HostMessageType::kPause;
  m.seq = d.pause_seq.fetch_add(1) + 1;
  m.time_ns = now;
  d.SendControl(m);
}

TaskProcessReport TaskProcess::Poll() {
  Impl& d = *impl_;
  std::lock_guard<std::mutex> lock(d.mu);
  if (!d.gone.load()) {
    if (d.imperative) {
      d.ObservePause();
      d.report.state = d.want_running.load() ? SideTaskState::kRunning : SideTaskState::kPaused;
      d.report.run_seconds = d.ImperativeRunSeconds();
      d.report.work = d.report.run_seconds;
    } else {
      if (d.send_failed.exchange(false)) {
        // A control message was dropped (full socket): resend the latest wish.
        HostMessage m;
        if (d.want_running.load()) {
          m.type = HostMessageType::kResume;
          m.time_ns = d.resume_ns.load();
          m.budget_us = d.resume_budget_us.load();
        } else {
          m.type = HostMessageType::kPause;
          m.seq = d.pause_seq.load();
          m.time_ns = MonotonicNs();
        }
        d.SendControl(m);
      }
      d.Drain();
      const bool unacked = !d.want_running.load() && d.pause_seq.load() > d.acked_pause_seq;
      d.report.unacked_pause_us = unacked ? static_cast<double>(MonotonicNs() - d.pause_ns.load()) * 1e-3 : 0;
      d.EnforcePause(MonotonicNs());
    }
    const int64_t now = MonotonicNs();
    d.output->Drain(now);
    d.CopyOutputStats();
    d.CheckGroupMemory(now);
    d.CheckExit(/*block=*/false);
  }
  return d.report;
}

TaskProcessReport TaskProcess::Stop(int grace_ms) {
  Impl& d = *impl_;
  std::lock_guard<std::mutex> lock(d.mu);
  if (d.gone.load()) return d.report;
  d.stop_requested = true;
  if (d.imperative) {
    if (d.want_running.exchange(false)) {
      const int64_t since = d.running_since_ns.exchange(0);
      if (since > 0) d.run_ns_total.fetch_add(MonotonicNs() - since);
    }
    d.Signal(SIGTERM);
    d.Signal(SIGCONT);  // a stopped process acts on SIGTERM only once continued
  } else {
    HostMessage m;
    m.type = HostMessageType::kStop;
    m.time_ns = MonotonicNs();
    d.SendControl(m);
    if (d.force_stopped.exchange(false)) d.Signal(SIGCONT);  // a stopped host cannot act on Stop
  }
  const int64_t deadline = MonotonicNs() + int64_t{grace_ms} * 1'000'000;
  while (!d.CheckExit(/*block=*/false)) {
    if (MonotonicNs() > deadline) {
      d.Signal(SIGKILL);
      d.CheckExit(/*block=*/true);
      break;
    }
    d.Drain();
    d.output->Drain(MonotonicNs());  // a task that floods while stopping must not block its exit
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return d.report;
}

}  // namespace pw
