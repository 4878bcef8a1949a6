// The two task runners (harvest/task_runners.h): a side-task host driven by
// messages, and a shell command driven by signals to its process group.
#include "harvest/task_runners.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "core/units.h"
#include "harvest/task_host.h"
#include "os/poll.h"
#include "os/process.h"
#include "os/process_stats.h"
#include "os/signals.h"
#include "os/socket.h"

namespace pw {
namespace {

constexpr int kControlFd = 3;  // the host's end of the socket, in the child

std::string SignalText(int sig) {
  return "killed by signal " + std::to_string(sig) + " (" + SignalDescription(sig) + ")";
}

// How a process ended, as waitid reported it; "" for a clean exit.
std::string ExitStatusText(int code, int value) {
  if (code == CLD_EXITED) return value == 0 ? "" : "exited with status " + std::to_string(value);
  if (code == CLD_KILLED || code == CLD_DUMPED) return SignalText(value);
  return "";
}

// The state letter of `pid` in /proc, or 0 when it is gone.
char ProcState(pid_t pid) {
  const std::optional<ProcessStat> stat = ReadProcessStat(pid);
  return stat ? stat->state : 0;
}

// A built-in task in `pipewright side-task host`, paused by messages: the
// rank sends RESUME/PAUSE without blocking; the host acks each pause after
// its current step ends, and a pause left unacked too long becomes SIGSTOP.
class HostRunner final : public TaskRunner {
 public:
  HostRunner(const SideTaskSpec& spec, const TaskProcessOptions& options, TaskGroup& group)
      : TaskRunner(options, group), spec_text_(FormatSideTaskSpec(spec)) {}

  Result<UniqueFd> Prepare(SpawnOptions& spawn) override {
    spawn.argv = SideTaskHostArgv(SideTaskHostArgs{spec_text_, kControlFd, options_.step_margin});
    spawn.argv.insert(spawn.argv.begin(), options_.host_binary);
    Result<std::pair<UniqueFd, UniqueFd>> control = SocketPair(SOCK_SEQPACKET);
    if (!control.ok()) return Status::IoError("side task: " + control.status().message());
    control_ = std::move(control->first);
    spawn.fds.push_back({kControlFd, control->second.get()});
    return std::move(control->second);
  }

  std::string Describe() const override { return spec_text_; }

  Status AwaitStart(TaskProcessReport& report, const std::function<bool(bool)>& check_exit) override;

  void RunFreely(int64_t now) override { Resume(now, 0); }

  void Resume(int64_t now, double budget_us) override {
    want_running_.store(true);
    if (force_stopped_.load()) {
      std::lock_guard<std::mutex> lock(group_.kill_mu);
      if (force_stopped_.exchange(false) && !group_.gone.load()) SignalProcessGroup(group_.pid, SIGCONT);
    }
    resume_ns_.store(now);
    resume_budget_us_.store(budget_us);
    HostMessage m;
    m.type = HostMessageType::kResume;
    m.time_ns = now;
    m.budget_us = budget_us;
    SendControl(m);
  }

  void Pause(int64_t now) override {
    want_running_.store(false);
    pause_ns_.store(now);
    HostMessage m;
    m.type = HostMessageType::kPause;
    m.seq = pause_seq_.fetch_add(1) + 1;
    m.time_ns = now;
    SendControl(m);
  }

  void Poll(TaskProcessReport& report) override {
    if (send_failed_.exchange(false)) ResendLatestWish();
    Drain(report);
    const bool unacked = !want_running_.load() && pause_seq_.load() > acked_pause_seq_;
    report.unacked_pause_us = unacked ? static_cast<double>(MonotonicNs() - pause_ns_.load()) * 1e-3 : 0;
    EnforcePause(MonotonicNs(), report);
  }

  void RequestStop() override {
    HostMessage m;
    m.type = HostMessageType::kStop;
    m.time_ns = MonotonicNs();
    SendControl(m);
    if (force_stopped_.exchange(false)) group_.Signal(SIGCONT);  // a stopped host cannot act on Stop
  }

  void Drain(TaskProcessReport& report) override {
    if (!control_.valid()) return;
    HostMessage m;
    while (ReceiveMessage(control_.get(), &m, sizeof(m)) == MessageReceived::kReceived) Apply(m, report);
  }

  ExitAccount AccountExit(int code, int value, TaskProcessReport& /*report*/) override {
    ExitAccount account;
    account.why = ExitStatusText(code, value);
    if (!host_failure_.empty()) {
      // The host's own FAILED text says more than its status; beside a
      // signal it says what the task was doing when it died.
      if (code == CLD_EXITED && value != 0) account.why = host_failure_;
      if (code == CLD_KILLED || code == CLD_DUMPED) account.why = host_failure_ + "; " + account.why;
    }
    if (account.why.empty()) account.why = "the side-task host exited unexpectedly";  // exit 0 without FINISHED
    // A host that reported its out-of-memory failure said so already; one
    // that exited by itself was not killed for its memory.
    account.memory_limit_may_explain = host_failure_kind_ != HostFailure::kOutOfMemory && code != CLD_EXITED;
    return account;
  }

 private:
  void SendControl(HostMessage m) {
    if (SendMessage(control_.get(), &m, sizeof(m), /*block=*/false) == MessageSent::kWouldBlock) {
      send_failed_.store(true);  // Poll resends the latest wish
    }
  }

  // A control message was dropped (full socket): resend the latest wish.
  void ResendLatestWish() {
    HostMessage m;
    if (want_running_.load()) {
      m.type = HostMessageType::kResume;
      m.time_ns = resume_ns_.load();
      m.budget_us = resume_budget_us_.load();
    } else {
      m.type = HostMessageType::kPause;
      m.seq = pause_seq_.load();
      m.time_ns = MonotonicNs();
    }
    SendControl(m);
  }

  void Apply(const HostMessage& m, TaskProcessReport& report);
  void EnforcePause(int64_t now, TaskProcessReport& report);

  const std::string spec_text_;  // FormatSideTaskSpec
  UniqueFd control_;             // the rank's end of the control socket
  // Written by Resume/Pause on the executor thread.
  std::atomic<int64_t> resume_ns_{0};  // time_ns of the last RESUME (resends keep the deadline)
  std::atomic<double> resume_budget_us_{0};
  std::atomic<bool> send_failed_{false};
  // Set (under kill_mu) when Poll stopped the group for an ignored pause;
  // the next Resume continues it.
  std::atomic<bool> force_stopped_{false};

  // Manager side.
  std::string host_failure_;  // the host's FAILED text
  HostFailure host_failure_kind_ = HostFailure::kNone;
  bool ready_ = false;             // READY received
  uint32_t acked_pause_seq_ = 0;   // last pause the host acknowledged
  int64_t steps_at_forced_pause_ = 0;  // report.steps at the last forced pause
};

void HostRunner::Apply(const HostMessage& m, TaskProcessReport& report) {
  report.steps = m.steps;
  report.partial_steps = m.partial_steps;
  report.work = m.work;
  report.run_seconds = m.run_seconds;
  report.step_us = m.step_us;
  switch (m.type) {
    case HostMessageType::kReady:
      report.unit = m.text;
      report.state = SideTaskState::kPaused;
      ready_ = true;
      break;
    case HostMessageType::kResumed:
      if (report.state != SideTaskState::kFinished) report.state = SideTaskState::kRunning;
      break;
    case HostMessageType::kPaused:
      if (report.state != SideTaskState::kFinished) report.state = SideTaskState::kPaused;
      RecordPause(report, m.time_ns - m.echo_ns);
      acked_pause_seq_ = std::max(acked_pause_seq_, m.seq);
      break;
    case HostMessageType::kFailed:
      host_failure_ = m.text;
      host_failure_kind_ = m.failure;
      break;
    case HostMessageType::kFinished:
      report.state = SideTaskState::kFinished;
      break;
    default:
      break;
  }
}

// A pause the current step has ignored for too long is enforced with
// SIGSTOP. Under kill_mu, so a concurrent Resume either sees force_stopped
// and continues the group, or stops Poll from acting.
void HostRunner::EnforcePause(int64_t now, TaskProcessReport& report) {
  if (force_stopped_.load() || want_running_.load() || pause_seq_.load() <= acked_pause_seq_) return;
  const double after_us =
      options_.force_pause_after_ms > 0 ? options_.force_pause_after_ms * 1e3 : std::max(50e3, 4 * report.step_us);
  if (static_cast<double>(now - pause_ns_.load()) * 1e-3 < after_us) return;
  std::lock_guard<std::mutex> lock(group_.kill_mu);
  if (group_.gone.load() || want_running_.load()) return;
  SignalProcessGroup(group_.pid, SIGSTOP);
  force_stopped_.store(true);
  ++report.forced_pauses;
  // A well-behaved step can miss the deadline when it is starved (idle
  // priority on the rank's busy core) but ends in the next bubble; a
  // step that runs through bubble after bubble is the task's fault.
  if (report.forced_pauses > 1 && report.steps == steps_at_forced_pause_) ++report.stalled_pauses;
  steps_at_forced_pause_ = report.steps;
}

// Blocks until the host sent READY (Setup and calibration steps done),
// failed, exited, or took longer than setup_timeout_s; the error says
// which. A host that did not start is reaped.
Status HostRunner::AwaitStart(TaskProcessReport& report, const std::function<bool(bool)>& check_exit) {
  const std::string what = "side task '" + spec_text_ + "' did not start: ";
  const int64_t deadline = MonotonicNs() + static_cast<int64_t>(options_.setup_timeout_s * 1e9);
  while (!ready_) {
    WaitReadable(control_.get(), 100);
    Drain(report);
    if (ready_) break;
    if (check_exit(/*block=*/false)) {
      std::string why = report.failure.empty() ? "the host exited during Setup" : report.failure;
      if (host_failure_.empty() && options_.memory_limit_bytes > 0) {
        // Died before it could report: typically the libraries did not fit.
        why += "; the host process alone needs about 1 GiB of address space (LibTorch, OpenCV), more than "
               "a memory limit of " + FormatBytes(static_cast<double>(options_.memory_limit_bytes)) + " may allow";
      }
      return Status::FailedPrecondition(what + why);
    }
    if (MonotonicNs() > deadline) {
      group_.Signal(SIGKILL);
      check_exit(/*block=*/true);
      return Status::FailedPrecondition(what + "Setup took longer than " + std::to_string(options_.setup_timeout_s) +
                                        " s");
    }
  }
  return Status::Ok();
}

// `sh -c COMMAND`, paused with SIGSTOP and resumed with SIGCONT of its
// process group; its work is the time it ran, between Resume and Pause.
class CommandRunner final : public TaskRunner {
 public:
  CommandRunner(const SideTaskSpec& spec, const TaskProcessOptions& options, TaskGroup& group)
      : TaskRunner(options, group), command_(spec.command) {}

  Result<UniqueFd> Prepare(SpawnOptions& spawn) override {
    spawn.argv = {"/bin/sh", "-c", command_};
    spawn.stop_before_exec = options_.start_paused;  // nothing runs before Resume
    return UniqueFd();
  }

  std::string Describe() const override { return command_; }

  Status AwaitStart(TaskProcessReport& report, const std::function<bool(bool)>& /*check_exit*/) override {
    report.unit = "seconds";
    report.state = options_.start_paused ? SideTaskState::kPaused : SideTaskState::kRunning;
    return Status::Ok();  // it runs (or waits stopped) as soon as it exists
  }

  void RunFreely(int64_t now) override {
    want_running_.store(true);
    running_since_ns_.store(now);
  }

  void Resume(int64_t now, double /*budget_us*/) override {
    if (want_running_.exchange(true)) return;
    running_since_ns_.store(now);
    group_.Signal(SIGCONT);
  }

  void Pause(int64_t now) override {
    if (!want_running_.exchange(false)) return;
    pause_ns_.store(now);
    group_.Signal(SIGSTOP);
    pause_seq_.fetch_add(1);
    const int64_t since = running_since_ns_.exchange(0);
    if (since > 0) run_ns_total_.fetch_add(now - since);
  }

  void Poll(TaskProcessReport& report) override {
    ObservePause(report);
    report.state = want_running_.load() ? SideTaskState::kRunning : SideTaskState::kPaused;
    report.run_seconds = RunSeconds();
    report.work = report.run_seconds;
    CheckGroupMemory(MonotonicNs(), report);
  }

  void RequestStop() override {
    if (want_running_.exchange(false)) {
      const int64_t since = running_since_ns_.exchange(0);
      if (since > 0) run_ns_total_.fetch_add(MonotonicNs() - since);
    }
    group_.Signal(SIGTERM);
    group_.Signal(SIGCONT);  // a stopped process acts on SIGTERM only once continued
  }

  void Drain(TaskProcessReport& /*report*/) override {}  // a command reports only through its output

  ExitAccount AccountExit(int code, int value, TaskProcessReport& report) override {
    report.run_seconds = RunSeconds();
    ExitAccount account;
    account.why = memory_exceeded_.empty() ? ExitStatusText(code, value) : memory_exceeded_;
    account.clean_exit_finishes = true;  // a command is done when it exits 0
    account.memory_limit_may_explain = memory_exceeded_.empty();
    account.quote_last_output = true;  // a command's failure is in its own words, on its output
    return account;
  }

 private:
  double RunSeconds() const {
    int64_t total = run_ns_total_.load();
    const int64_t since = running_since_ns_.load();
    if (since > 0) total += MonotonicNs() - since;
    return static_cast<double>(total) * 1e-9;
  }

  void ObservePause(TaskProcessReport& report);
  void CheckGroupMemory(int64_t now, TaskProcessReport& report);

  const std::string command_;
  // Written by Resume/Pause on the executor thread.
  std::atomic<int64_t> run_ns_total_{0};  // time between Resume and Pause
  std::atomic<int64_t> running_since_ns_{0};

  // Manager side.
  uint32_t observed_pause_seq_ = 0;  // last pause whose stop was seen
  int64_t group_checked_ns_ = 0;
  std::string memory_exceeded_;      // why the group was killed, when it was
};

// Watches /proc for the stop of the last Pause, briefly.
void CommandRunner::ObservePause(TaskProcessReport& report) {
  const uint32_t seq = pause_seq_.load();
  if (seq == observed_pause_seq_ || want_running_.load()) return;
  const int64_t give_up = MonotonicNs() + 2'000'000;
  while (true) {
    const char state = ProcState(group_.pid);
    if (state == 'T' || state == 't') {
      const int64_t now = MonotonicNs();
      if (pause_seq_.load() == seq && !want_running_.load()) {
        observed_pause_seq_ = seq;
        RecordPause(report, now - pause_ns_.load());
      }
      return;
    }
    if (state == 0 || state == 'Z' || MonotonicNs() > give_up) return;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

// RLIMIT_AS binds each process alone, so the group's summed private memory
// is checked too, at a low rate (a /proc scan). Private, not resident:
// before exec the child still maps the rank's pages copy-on-write, and
// shared libraries are not the task's cost.
void CommandRunner::CheckGroupMemory(int64_t now, TaskProcessReport& report) {
  if (options_.memory_limit_bytes <= 0 || !memory_exceeded_.empty()) return;
  if (now - group_checked_ns_ < static_cast<int64_t>(options_.group_check_interval_ms * 1e6)) return;
  group_checked_ns_ = now;
  const ProcessGroupUsage usage = ReadProcessGroupUsage(group_.pid);
  report.processes_max = std::max(report.processes_max, usage.processes);
  report.private_max_bytes = std::max(report.private_max_bytes, usage.private_bytes);
  if (usage.private_bytes <= options_.memory_limit_bytes) return;
  memory_exceeded_ = "its " + std::to_string(usage.processes) + " processes held " +
                     FormatBytes(static_cast<double>(usage.private_bytes)) +
                     " of their own memory, over its memory limit of " +
                     FormatBytes(static_cast<double>(options_.memory_limit_bytes)) + "; the process group was killed";
  group_.Signal(SIGKILL);
}

}  // namespace

void TaskGroup::Signal(int sig) {
  std::lock_guard<std::mutex> lock(kill_mu);
  if (!gone.load()) SignalProcessGroup(pid, sig);
}

void TaskRunner::RecordPause(TaskProcessReport& report, int64_t latency_ns) {
  const double us = static_cast<double>(latency_ns) * 1e-3;
  ++report.pauses;
  latency_sum_us_ += us;
  report.pause_latency_mean_us = latency_sum_us_ / static_cast<double>(report.pauses);
  report.pause_latency_max_us = std::max(report.pause_latency_max_us, us);
}

Result<std::unique_ptr<TaskRunner>> MakeTaskRunner(const SideTaskSpec& spec, const TaskProcessOptions& options,
                                                   TaskGroup& group) {
  if (IsCommandTask(spec)) {
    if (spec.command.empty()) {
      return Status::InvalidArgument("side task 'cmd': no command line given (--side-task-cmd \"COMMAND\")");
    }
    return std::unique_ptr<TaskRunner>(new CommandRunner(spec, options, group));
  }
  PW_RETURN_IF_ERROR(MakeBuiltinSideTask(spec).status());  // bad specs fail here, not in the child
  if (std::optional<std::string> why = WhyNotExecutable(options.host_binary)) {
    return Status::NotFound("side-task host binary '" + options.host_binary + "' is not executable: " + *why);
  }
  return std::unique_ptr<TaskRunner>(new HostRunner(spec, options, group));
}

}  // namespace pw
