#include "comm/launcher.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>

#include "core/line_splitter.h"
#include "core/status_record.h"
#include "os/child_process.h"
#include "os/fd_io.h"
#include "os/pipe.h"
#include "os/poll.h"
#include "os/process_stats.h"
#include "os/reserved_port.h"
#include "os/signals.h"
#include "os/spawn.h"

extern char** environ;

namespace pw {
namespace {

using Clock = std::chrono::steady_clock;

// When pidfd_open is unavailable (old kernels, some sandboxes) child exits
// are found by polling waitpid at this period instead.
constexpr int kReapPollMs = 50;
// After the last rank exits, how long its pipes may stay open (held by a
// program it started) before the launcher stops reading them.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(1000);
// How long a rank that only lost a peer waits for that peer to fail with
// its own reason before the launcher stops the job (see ReapExited).
constexpr auto kPeerLossSettle = std::chrono::milliseconds(1000);

// The reason in the last status record among a rank's last stderr lines
// (core/status_record.h); kUnspecified when it wrote none.
StatusReason ReportedReason(const RankExit& exit) {
  for (auto line = exit.stderr_tail.rbegin(); line != exit.stderr_tail.rend(); ++line) {
    if (std::optional<StatusRecord> record = ParseStatusRecordLine(*line)) return record->reason;
  }
  return StatusReason::kUnspecified;
}

// Whether a failed rank only lost a peer: killed by SIGPIPE (a write to a
// socket the peer closed), or its status record says a peer or the store
// went away. Such a rank is seldom the cause of a failure.
bool ReportsPeerLoss(const RankExit& exit) {
  if (!exit.exited && exit.signal == SIGPIPE) return true;
  return ReportedReason(exit) == StatusReason::kPeerLost;
}

// "[rank 2] ": what starts each line the launcher passes on from rank 2.
std::string RankLinePrefix(int rank) { return "[rank " + std::to_string(rank) + "] "; }

double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string SecondsText(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f s", seconds);
  return buffer;
}

std::vector<std::string> RankEnvironment(int rank, int world_size, int port,
                                         const LaunchOptions& options) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    vars[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  std::string threads = std::to_string(std::max(1, options.threads_per_rank));
  vars["MASTER_ADDR"] = options.master_addr;
  vars["MASTER_PORT"] = std::to_string(port);
  vars["RANK"] = std::to_string(rank);
  vars["WORLD_SIZE"] = std::to_string(world_size);
  vars["LOCAL_RANK"] = std::to_string(rank);
  vars["LOCAL_WORLD_SIZE"] = std::to_string(world_size);
  vars["OMP_NUM_THREADS"] = threads;
  vars["OPENBLAS_NUM_THREADS"] = threads;
  vars["MKL_NUM_THREADS"] = threads;
  vars[kStatusRecordEnv] = "1";  // ranks say why they failed (ReportedReason)
  for (const auto& [key, value] : options.env) vars[key] = value;
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [key, value] : vars) out.push_back(key + "=" + value);
  return out;
}


struct Child {
  Child(int r, const LaunchOptions& options)
      : rank(r),
        out({.prefix = RankLinePrefix(r)}),
        err({.prefix = RankLinePrefix(r), .tail_lines = options.stderr_tail_lines}) {}

  int rank;
  ChildProcess process;
  pid_t pid = -1;
  UniqueFd out_fd;
  UniqueFd err_fd;
  LineSplitter out;
  LineSplitter err;
  bool reaped = false;
  RankExit exit;
  Clock::time_point start;
  std::optional<Clock::time_point> stopped_since;  // state T/t at every sample since
};

// Starts one rank: its own process group, killed with the launcher's
// thread, stdin /dev/null, stdout / stderr into the launcher's pipes,
// nothing else inherited (os/spawn.h).
Status StartRank(Child& child, const std::string& path, const std::vector<std::string>& argv,
                 std::vector<std::string> env) {
  PW_ASSIGN_OR_RETURN(Pipe out, Pipe::Create("rank " + std::to_string(child.rank) + "'s stdout"));
  PW_ASSIGN_OR_RETURN(Pipe err, Pipe::Create("rank " + std::to_string(child.rank) + "'s stderr"));
  SpawnOptions spawn;
  spawn.argv = argv;
  spawn.argv[0] = path;
  spawn.env = std::move(env);
  spawn.new_process_group = true;
  spawn.die_with_parent = true;
  spawn.reset_signals = true;
  spawn.stdin_from_dev_null = true;
  spawn.fds = {{1, out.write_end.get()}, {2, err.write_end.get()}};
  Result<ChildProcess> process = ChildProcess::Start(spawn);
  if (!process.ok()) {
    return Status::IoError("rank " + std::to_string(child.rank) + ": " + process.status().message());
  }
  child.process = std::move(*process);
  child.pid = child.process.pid();
  child.out_fd = std::move(out.read_end);
  child.err_fd = std::move(err.read_end);
  SetNonBlocking(child.out_fd.get());
  SetNonBlocking(child.err_fd.get());
  child.start = Clock::now();
  child.exit.rank = child.rank;
  child.exit.pid = child.pid;
  return Status::Ok();
}

// Signals the rank's process group (the rank and whatever it started).
void SignalRank(const Child& child, int sig) { child.process.SignalGroup(sig); }

class Supervisor {
 public:
  Supervisor(std::vector<Child>& children, const LaunchOptions& options)
      : children_(children), options_(options) {}

  // Polls pipes and child exits until every rank is reaped and drained.
  void Run() {
    Clock::time_point started = Clock::now();
    std::optional<Clock::time_point> job_deadline;
    if (options_.timeout.count() > 0) job_deadline = started + options_.timeout;
    std::optional<Clock::time_point> all_reaped_at;
    while (true) {
      Clock::time_point now = Clock::now();
      if (job_deadline && now >= *job_deadline && !stopping_ && !AllReaped()) {
        timed_out_ = true;
        StartStopping(now);
      }
      if (straggler_deadline_ && now >= *straggler_deadline_ && !stopping_ && !AllReaped()) {
        straggled_ = true;
        StartStopping(now);
      }
      if (options_.stopped_timeout.count() > 0 && !stopping_ && now >= next_state_check_) {
        next_state_check_ = now + StateCheckPeriod();
        if (SomeRankStoppedTooLong(now)) {
          stalled_ = true;
          StartStopping(now);
        }
      }
      if (settle_deadline_ && now >= *settle_deadline_ && !stopping_) StartStopping(now);
      if (stopping_ && !killed_ && now >= kill_deadline_) {
        for (auto& c : children_) {
          if (!c.reaped) SignalRank(c, SIGKILL);
        }
        killed_ = true;
      }
      if (AllReaped()) {
        if (!all_reaped_at) {
          all_reaped_at = now;
          // Programs a rank started in its process group do not outlive the
          // job (they would also hold its pipes open).
          for (auto& c : children_) SignalProcessGroupOnly(c.pid, SIGKILL);
        }
        if (AllDrained() || now - *all_reaped_at >= kDrainAfterExit) break;
      }
      int wait_ms = WaitMs(now, job_deadline, all_reaped_at);
      PollOnce(wait_ms);
      ReapExited();
    }
    for (auto& c : children_) {
      FlushPipe(c, c.out_fd, OutputStream::kStdout, Read::kToEof);
      FlushPipe(c, c.err_fd, OutputStream::kStderr, Read::kToEof);
      c.exit.stderr_tail.assign(c.err.tail().begin(), c.err.tail().end());
    }
  }

  bool timed_out() const { return timed_out_; }
  // Whether ranks were stopped for running straggler_timeout past the first
  // rank that finished successfully (`first_finished`).
  bool straggled() const { return straggled_; }
  // Whether ranks were stopped because one stayed in state T/t for
  // stopped_timeout.
  bool stalled() const { return stalled_; }
  int first_finished() const { return first_finished_; }
  // Ranks that failed on their own: those with a reason of their own first,
  // then those that only lost a peer (ReportsPeerLoss), each in the order
  // the launcher saw them.
  const std::vector<int>& failures() const { return failures_; }
  // Ranks still running when the timeout (or the straggler timeout) expired.
  const std::vector<int>& running_at_timeout() const { return running_at_timeout_; }
  // Ranks still running when the launcher began to stop the job.
  const std::vector<int>& running_at_failure() const { return running_at_failure_; }

 private:
  std::chrono::milliseconds StateCheckPeriod() const {
    return std::clamp(options_.stopped_timeout / 4, std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
  }

  // Samples every running rank's state; true when one has been stopped
  // (state T or t) at every sample for stopped_timeout.
  bool SomeRankStoppedTooLong(Clock::time_point now) {
    bool too_long = false;
    for (auto& c : children_) {
      if (c.reaped) continue;
      std::optional<ProcessStat> stat = ReadProcessStat(c.pid);
      if (!stat || (stat->state != 'T' && stat->state != 't')) {
        c.stopped_since.reset();
        continue;
      }
      if (!c.stopped_since) c.stopped_since = now;
      too_long = too_long || now - *c.stopped_since >= options_.stopped_timeout;
    }
    return too_long;
  }

  bool AllReaped() const {
    return std::all_of(children_.begin(), children_.end(),
                       [](const Child& c) { return c.reaped; });
  }
  bool AllDrained() const {
    return std::all_of(children_.begin(), children_.end(),
                       [](const Child& c) { return !c.out_fd.valid() && !c.err_fd.valid(); });
  }

  int WaitMs(Clock::time_point now, std::optional<Clock::time_point> job_deadline,
             std::optional<Clock::time_point> all_reaped_at) const {
    auto next = now + std::chrono::hours(1);
    if (job_deadline && !stopping_) next = std::min(next, *job_deadline);
    if (straggler_deadline_ && !stopping_) next = std::min(next, *straggler_deadline_);
    if (options_.stopped_timeout.count() > 0 && !stopping_) next = std::min(next, next_state_check_);
    if (stopping_ && !killed_) next = std::min(next, kill_deadline_);
    if (settle_deadline_ && !stopping_) next = std::min(next, *settle_deadline_);
    if (all_reaped_at) next = std::min(next, *all_reaped_at + kDrainAfterExit);
    bool have_pidfds = std::all_of(children_.begin(), children_.end(),
                                   [](const Child& c) { return c.reaped || c.process.pidfd() >= 0; });
    if (!have_pidfds) next = std::min(next, now + std::chrono::milliseconds(kReapPollMs));
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1;
    return static_cast<int>(std::clamp<long long>(ms, 0, 3600 * 1000));
  }

  void PollOnce(int wait_ms) {
    PollSet poll_set;
    std::vector<std::pair<Child*, OutputStream>> owners;  // of the pipes, in poll_set's order
    for (auto& c : children_) {
      if (c.out_fd.valid()) { poll_set.Add(c.out_fd.get()); owners.push_back({&c, OutputStream::kStdout}); }
      if (c.err_fd.valid()) { poll_set.Add(c.err_fd.get()); owners.push_back({&c, OutputStream::kStderr}); }
    }
    // Exits wake the wait too; ReapExited() handles them.
    for (auto& c : children_) {
      if (!c.reaped && c.process.pidfd() >= 0) poll_set.Add(c.process.pidfd());
    }
    if (poll_set.Wait(wait_ms) <= 0) return;  // timeout, or EINTR: the loop re-checks everything
    for (size_t i = 0; i < owners.size(); ++i) {
      if (!poll_set.Ready(i)) continue;
      Child& c = *owners[i].first;
      const OutputStream stream = owners[i].second;
      FlushPipe(c, stream == OutputStream::kStdout ? c.out_fd : c.err_fd, stream, Read::kOnce);
    }
  }

  // How much FlushPipe reads: one read (a poll event; keeps ranks fair),
  // what the pipe holds now, or everything up to end of file (draining at
  // the end).
  enum class Read { kOnce, kAvailable, kToEof };

  void FlushPipe(Child& c, UniqueFd& fd, OutputStream stream, Read how) {
    if (!fd.valid()) return;
    LineSplitter& splitter = stream == OutputStream::kStdout ? c.out : c.err;
    auto emit = [&](const std::string& line) { Emit(c.rank, stream, line); };
    char buffer[64 * 1024];
    while (true) {
      const ReadChunk chunk = ReadSome(fd.get(), buffer, sizeof(buffer));
      if (chunk.state == ReadChunk::kData) {
        splitter.Feed(std::string_view(buffer, chunk.bytes), emit);
        if (how == Read::kOnce) return;
        continue;
      }
      if (chunk.state == ReadChunk::kWouldBlock && how != Read::kToEof) return;
      // EOF, error, or (at the end) nothing more: this stream is done.
      splitter.Finish(emit);
      fd.Reset();
      return;
    }
  }

  void Emit(int rank, OutputStream stream, const std::string& line) {
    // A status record is for the launcher (ReportedReason), not for people.
    if (stream == OutputStream::kStderr) {
      std::string_view text = line;
      const std::string prefix = RankLinePrefix(rank);
      if (text.starts_with(prefix)) text.remove_prefix(prefix.size());
      if (ParseStatusRecordLine(text)) return;
    }
    if (options_.sink) {
      options_.sink(rank, stream, line);
      return;
    }
    WriteAll(stream == OutputStream::kStdout ? 1 : 2, line + "\n");
  }

  void ReapExited() {
    std::vector<int> failed_now;
    for (auto& c : children_) {
      if (c.reaped) continue;
      const std::optional<ExitStatus> status = c.process.TryReap();
      if (!status) continue;
      c.reaped = true;
      c.exit.seconds = SecondsBetween(c.start, Clock::now());
      c.exit.exited = status->exited;
      c.exit.exit_code = status->exit_code;
      c.exit.signal = status->signal;
      if (!c.exit.ok() && !c.exit.stopped_by_launcher) {
        // Its last words are needed now, to tell a cause from a consequence.
        FlushPipe(c, c.err_fd, OutputStream::kStderr, Read::kAvailable);
        c.exit.stderr_tail.assign(c.err.tail().begin(), c.err.tail().end());
        failed_now.push_back(c.rank);
      }
      if (c.exit.ok() && first_finished_ < 0 && options_.straggler_timeout.count() > 0) {
        first_finished_ = c.rank;
        straggler_deadline_ = Clock::now() + options_.straggler_timeout;
      }
    }
    // Ranks reaped in one pass are listed killed-by-a-signal first: a rank
    // that was killed is the likelier cause of a peer's connection error
    // than the other way round.
    std::stable_sort(failed_now.begin(), failed_now.end(), [this](int a, int b) {
      return !children_[a].exit.exited && children_[b].exit.exited;
    });
    failures_.insert(failures_.end(), failed_now.begin(), failed_now.end());
    // A rank that only lost a peer is listed after every rank that failed
    // for a reason of its own, whenever that rank is reaped.
    std::stable_partition(failures_.begin(), failures_.end(),
                          [this](int rank) { return !ReportsPeerLoss(children_[rank].exit); });
    if (failures_.empty() || stopping_) return;
    // After the whole pass, so ranks that failed together all count as
    // failed. When every failure so far is a lost peer, the peer is likely
    // on its way out with the real cause (a rank that returns an error
    // closes its sockets before it prints it): it gets kPeerLossSettle to
    // exit and say so before it is signalled.
    const bool only_peer_loss = std::all_of(failures_.begin(), failures_.end(),
                                            [this](int rank) { return ReportsPeerLoss(children_[rank].exit); });
    if (!only_peer_loss) {
      StartStopping(Clock::now());
    } else if (!settle_deadline_) {
      settle_deadline_ = Clock::now() + std::min<std::chrono::milliseconds>(kPeerLossSettle, options_.grace);
    }
  }

  void StartStopping(Clock::time_point now) {
    stopping_ = true;
    kill_deadline_ = now + options_.grace;
    for (auto& c : children_) {
      if (c.reaped) continue;
      if (timed_out_ || straggled_) running_at_timeout_.push_back(c.rank);
      running_at_failure_.push_back(c.rank);
      // Read before any signal of ours: a stopped rank hung the job. It
      // would hold SIGTERM until a SIGCONT, so it gets SIGKILL now.
      std::optional<ProcessStat> stat = ReadProcessStat(c.pid);
      c.exit.was_stopped = stat && (stat->state == 'T' || stat->state == 't');
      c.exit.stopped_by_launcher = true;
      SignalRank(c, options_.grace.count() > 0 && !c.exit.was_stopped ? SIGTERM : SIGKILL);
    }
    if (options_.grace.count() <= 0) killed_ = true;
  }

  std::vector<Child>& children_;
  const LaunchOptions& options_;
  bool stopping_ = false;
  bool killed_ = false;
  bool timed_out_ = false;
  bool straggled_ = false;
  bool stalled_ = false;
  Clock::time_point next_state_check_{};
  int first_finished_ = -1;
  std::optional<Clock::time_point> straggler_deadline_;
  std::optional<Clock::time_point> settle_deadline_;  // see ReapExited
  Clock::time_point kill_deadline_;
  std::vector<int> failures_;
  std::vector<int> running_at_timeout_;
  std::vector<int> running_at_failure_;
};

std::string TailText(const RankExit& exit) {
  if (exit.stderr_tail.empty()) return "  (no stderr output)\n";
  std::string text;
  for (const auto& line : exit.stderr_tail) {
    if (!ParseStatusRecordLine(line)) text += "  " + RankLinePrefix(exit.rank) + line + "\n";
  }
  return text;
}

std::string JoinRanks(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  }
  return text;
}

// Whether a rank's status record says its wait for a peer timed out
// (comm/comm_group.cc's PendingOp::Wait).
bool ReportsTimeout(const RankExit& exit) { return ReportedReason(exit) == StatusReason::kPeerTimedOut; }

// "rank 1 (pid 4243) was stopped (process state T: SIGSTOP or a debugger)
// and hung the job; " for every rank that was stopped, or the ranks that
// were still running when the first failing rank reported a timeout; empty
// when neither (the first failing rank is then the culprit).
std::string CulpritText(const Supervisor& supervisor, const std::vector<Child>& children,
                        const RankExit* first) {
  std::string text;
  for (const Child& c : children) {
    if (!c.exit.was_stopped) continue;
    text += "rank " + std::to_string(c.rank) + " (pid " + std::to_string(c.pid) +
            ") was stopped (process state T: SIGSTOP or a debugger) and hung the job; ";
  }
  if (!text.empty() || first == nullptr || !ReportsTimeout(*first)) return text;
  if (supervisor.running_at_failure().empty()) return text;
  return "rank(s) " + JoinRanks(supervisor.running_at_failure()) + " had not timed out when rank " + std::to_string(first->rank) +
         " timed out waiting for a peer: the likely culprit(s) (hung, or computing longer than the "
         "collective timeout); ";
}

Status FailureStatus(const Supervisor& supervisor, const std::vector<Child>& children,
                     const LaunchOptions& options) {
  if (!supervisor.failures().empty()) {
    const RankExit& first = children[supervisor.failures().front()].exit;
    std::string message = CulpritText(supervisor, children, &first) + "rank " + std::to_string(first.rank) +
                          " (pid " + std::to_string(first.pid) + ") " + first.Describe() + " after " +
                          SecondsText(first.seconds);
    if (ReportsTimeout(first)) message += ", having timed out waiting for a peer";
    for (size_t i = 1; i < supervisor.failures().size(); ++i) {
      const RankExit& other = children[supervisor.failures()[i]].exit;
      message += "; then rank " + std::to_string(other.rank) + " " + other.Describe();
    }
    int stopped = 0;
    for (const auto& c : children) stopped += c.exit.stopped_by_launcher ? 1 : 0;
    if (stopped > 0) {
      message += "; the launcher stopped the other " + std::to_string(stopped) + " rank(s)";
    }
    message += ". Last stderr lines of rank " + std::to_string(first.rank) + ":\n" +
               TailText(first);
    return Status::IoError(message);
  }
  if (supervisor.stalled()) {
    return Status::IoError(CulpritText(supervisor, children, nullptr) + "it stayed stopped for " +
                           SecondsText(std::chrono::duration<double>(options.stopped_timeout).count()) +
                           " (LaunchOptions::stopped_timeout: its peers may be blocked where no timeout "
                           "reaches, e.g. on the store it hosts); all ranks were stopped.");
  }
  if (supervisor.straggled()) {
    std::string message =
        CulpritText(supervisor, children, nullptr) + "rank(s) " + JoinRanks(supervisor.running_at_timeout()) +
        " still running " +
        SecondsText(std::chrono::duration<double>(options.straggler_timeout).count()) + " after rank " +
        std::to_string(supervisor.first_finished()) +
        " finished (LaunchOptions::straggler_timeout: the ranks of a job end together); all ranks were stopped.";
    for (int rank : supervisor.running_at_timeout()) {
      message += " Last stderr lines of rank " + std::to_string(rank) + ":\n" + TailText(children[rank].exit);
    }
    return Status::IoError(message);
  }
  std::string message =
      CulpritText(supervisor, children, nullptr) + "job timed out after " +
      SecondsText(std::chrono::duration<double>(options.timeout).count()) +
      " (LaunchOptions::timeout) with rank(s) " + JoinRanks(supervisor.running_at_timeout()) +
      " still running; all ranks were stopped.";
  for (int rank : supervisor.running_at_timeout()) {
    message += " Last stderr lines of rank " + std::to_string(rank) + ":\n" +
               TailText(children[rank].exit);
  }
  return Status::IoError(message);
}

}  // namespace

std::string RankExit::Describe() const {
  if (exited) return "exited with code " + std::to_string(exit_code);
  const std::string description = SignalDescription(signal);
  std::string text = "was killed by signal " + SignalName(signal);
  if (!description.empty()) text += " (" + description + ")";
  if (stopped_by_launcher) text += " sent by the launcher";
  return text;
}

Status LaunchLocalRanks(const std::vector<std::string>& argv, int world_size,
                        const LaunchOptions& options, LaunchReport* report) {
  if (argv.empty()) return Status::InvalidArgument("no program to launch (empty argv)");
  if (world_size < 1) {
    return Status::InvalidArgument("world size " + std::to_string(world_size) +
                                   " is not positive");
  }
  std::optional<std::string> path = FindExecutable(argv[0]);
  if (!path) {
    return Status::InvalidArgument("cannot run '" + argv[0] +
                                   "': not found or not executable (PATH searched when "
                                   "the name has no '/')");
  }
  int port = options.master_port;
  // Held until every rank has exited: between now and rank 0 hosting the
  // store on it, no other job's port choice can take it.
  std::optional<ReservedPort> reserved;
  if (port == 0) {
    Result<ReservedPort> r = ReservedPort::On(options.master_addr);
    if (!r.ok()) return r.status().WithContext("master port");
    reserved.emplace(std::move(*r));
    port = reserved->port();
  }
  Clock::time_point started = Clock::now();

  std::vector<Child> children;
  children.reserve(world_size);
  for (int r = 0; r < world_size; ++r) children.emplace_back(r, options);

  Status spawn_status;
  int spawned = 0;
  for (; spawned < world_size; ++spawned) {
    spawn_status = StartRank(children[spawned], *path, argv, RankEnvironment(spawned, world_size, port, options));
    if (!spawn_status.ok()) break;
  }
  if (!spawn_status.ok()) {
    for (int r = 0; r < spawned; ++r) {
      SignalRank(children[r], SIGKILL);
      children[r].process.Wait();
    }
    return spawn_status;
  }

  Supervisor supervisor(children, options);
  supervisor.Run();
  for (auto& c : children) {
    c.out_fd.Reset();
    c.err_fd.Reset();
  }
  if (report != nullptr) {
    report->master_port = port;
    report->seconds = SecondsBetween(started, Clock::now());
    report->ranks.clear();
    for (const auto& c : children) report->ranks.push_back(c.exit);
  }
  if (supervisor.failures().empty() && !supervisor.timed_out() && !supervisor.straggled() &&
      !supervisor.stalled()) {
    return Status::Ok();
  }
  return FailureStatus(supervisor, children, options);
}

}  // namespace pw
