// LaunchLocalRanks with /bin/sh ranks: prefixing, failure propagation,
// timeouts, escalation to SIGKILL, and that no process outlives a job.
#include "comm/launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace pw {
namespace {

using Clock = std::chrono::steady_clock;

struct Captured {
  std::vector<std::string> out;
  std::vector<std::string> err;
  LineSink Sink() {
    return [this](int, OutputStream stream, const std::string& line) {
      (stream == OutputStream::kStdout ? out : err).push_back(line);
    };
  }
};

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<std::string> Sh(const std::string& script) { return {"/bin/sh", "-c", script}; }


bool Contains(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

// Live (non-zombie) processes whose process group is `pgid`.
std::vector<pid_t> LiveMembersOfGroup(pid_t pgid) {
  std::vector<pid_t> members;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    long ppid = 0, pgrp = 0;
    if (!(rest >> state >> ppid >> pgrp)) continue;
    if (pgrp == pgid && state != "Z") members.push_back(std::stoi(name));
  }
  return members;
}

// Neither a rank nor anything in its process group is alive (SIGKILL is
// asynchronous, so allow a moment; zombies waiting for init do not count).
void ExpectGone(const LaunchReport& report) {
  for (const auto& r : report.ranks) {
    EXPECT_EQ(kill(r.pid, 0), -1) << "rank " << r.rank << " pid " << r.pid << " not reaped";
    auto start = Clock::now();
    while (!LiveMembersOfGroup(r.pid).empty() && Since(start) < 1.0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(LiveMembersOfGroup(r.pid).empty())
        << "processes of rank " << r.rank << "'s group outlived the job";
  }
}

TEST(Launcher, PrefixesWholeLinesAndSetsTheEnvironment) {
  Captured captured;
  LaunchOptions options;
  options.sink = captured.Sink();
  options.env = {{"PW_EXTRA", "x"}};
  LaunchReport report;
  Status st = LaunchLocalRanks(
      Sh("printf 'hel'; sleep 0.2; printf 'lo from %s\\n' \"$RANK\"; "
         "echo \"env $RANK/$WORLD_SIZE local $LOCAL_RANK at $MASTER_ADDR:$MASTER_PORT "
         "omp $OMP_NUM_THREADS blas $OPENBLAS_NUM_THREADS $PW_EXTRA\" >&2; printf 'tail'"),
      3, options, &report);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(report.ranks.size(), 3u);
  std::string port = std::to_string(report.master_port);
  EXPECT_GT(report.master_port, 0);
  for (int r = 0; r < 3; ++r) {
    std::string p = "[rank " + std::to_string(r) + "] ";
    EXPECT_TRUE(Contains(captured.out, p + "hello from " + std::to_string(r)));
    EXPECT_TRUE(Contains(captured.out, p + "tail"));  // unterminated last line
    EXPECT_TRUE(Contains(captured.err, p + "env " + std::to_string(r) + "/3 local " +
                                           std::to_string(r) + " at 127.0.0.1:" + port +
                                           " omp 1 blas 1 x"));
    EXPECT_TRUE(report.ranks[r].ok());
  }
  EXPECT_EQ(captured.out.size(), 6u);
  EXPECT_EQ(captured.err.size(), 3u);
  ExpectGone(report);
}

TEST(Launcher, RankExitCodeStopsTheOthersAndNamesTheRank) {
  Captured captured;
  LaunchOptions options;
  options.sink = captured.Sink();
  LaunchReport report;
  auto start = Clock::now();
  Status st = LaunchLocalRanks(
      Sh("if [ \"$RANK\" = 2 ]; then echo 'loading shard'; echo 'boom: bad shard' >&2; "
         "sleep 0.3; exit 3; fi; exec sleep 60"),
      4, options, &report);
  double seconds = Since(start);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("rank 2 (pid"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("exited with code 3"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("[rank 2] boom: bad shard"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("stopped the other 3 rank(s)"), std::string::npos)
      << st.message();
  EXPECT_LT(seconds, 5.0);
  for (int r : {0, 1, 3}) {
    EXPECT_TRUE(report.ranks[r].stopped_by_launcher);
    EXPECT_FALSE(report.ranks[r].exited);
    EXPECT_EQ(report.ranks[r].signal, SIGTERM);
  }
  EXPECT_EQ(report.ranks[2].exit_code, 3);
  ExpectGone(report);
}

TEST(Launcher, CrashBySignalIsNamed) {
  LaunchOptions options;
  options.sink = [](int, OutputStream, const std::string&) {};
  LaunchReport report;
  Status st = LaunchLocalRanks(
      Sh("if [ \"$RANK\" = 1 ]; then sleep 0.2; kill -ABRT $$; fi; exec sleep 60"), 2, options,
      &report);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank 1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("killed by signal SIGABRT (Aborted)"), std::string::npos)
      << st.message();
  EXPECT_TRUE(report.ranks[0].stopped_by_launcher);
  ExpectGone(report);
}

TEST(Launcher, GlobalTimeoutNamesTheHangingRank) {
  LaunchOptions options;
  options.sink = [](int, OutputStream, const std::string&) {};
  options.timeout = std::chrono::milliseconds(1000);
  LaunchReport report;
  auto start = Clock::now();
  Status st = LaunchLocalRanks(
      Sh("if [ \"$RANK\" = 1 ]; then echo 'waiting for godot' >&2; exec sleep 60; fi"), 3,
      options, &report);
  double seconds = Since(start);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("timed out after 1.00 s"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("rank(s) 1 still running"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("[rank 1] waiting for godot"), std::string::npos)
      << st.message();
  EXPECT_LT(seconds, 4.0);
  EXPECT_TRUE(report.ranks[0].ok());
  EXPECT_TRUE(report.ranks[1].stopped_by_launcher);
  ExpectGone(report);
}

// A hang: rank 1 stops itself (SIGSTOP), rank 0 times out waiting for it.
// The stopped rank is named first, as the culprit, and is killed at once.
TEST(Launcher, StoppedRankIsNamedAsTheCulprit) {
  LaunchOptions options;
  options.sink = [](int, OutputStream, const std::string&) {};
  LaunchReport report;
  Status st = LaunchLocalRanks(
      Sh("if [ \"$RANK\" = 1 ]; then kill -STOP $$; exec sleep 60; fi; sleep 0.5; "
         "echo 'recv from rank 1 failed after 0.50 s (timeout 0.50 s): Timed out waiting' >&2; "
         "echo 'pipewright-status: code=IoError reason=peer-timed-out' >&2; exit 1"),
      2, options, &report);
  ASSERT_FALSE(st.ok());
  const std::string& m = st.message();
  const size_t culprit = m.find("rank 1 (pid " + std::to_string(report.ranks[1].pid) +
                                ") was stopped (process state T: SIGSTOP or a debugger) and hung the job");
  ASSERT_NE(culprit, std::string::npos) << m;
  EXPECT_LT(culprit, m.find("rank 0 (pid")) << m;
  EXPECT_NE(m.find("exited with code 1 after"), std::string::npos) << m;
  EXPECT_NE(m.find("having timed out waiting for a peer"), std::string::npos) << m;
  EXPECT_TRUE(report.ranks[1].was_stopped);
  EXPECT_FALSE(report.ranks[0].was_stopped);
  // SIGTERM would wait for a SIGCONT: a stopped rank is killed outright.
  EXPECT_EQ(report.ranks[1].signal, SIGKILL);
  ExpectGone(report);
}

// No rank stopped, but the first failure is a timeout: the ranks that had
// not timed out (rank 1 here; rank 2 had finished) are the likely culprits.
TEST(Launcher, RanksRunningWhenAPeerTimedOutAreTheLikelyCulprits) {
  LaunchOptions options;
  options.sink = [](int, OutputStream, const std::string&) {};
  LaunchReport report;
  Status st = LaunchLocalRanks(
      Sh("case $RANK in 1) exec sleep 60;; 2) exit 0;; esac; sleep 0.5; "
         "echo 'all-reduce failed after 0.50 s (timeout 0.50 s): Timed out waiting' >&2; "
         "echo 'pipewright-status: code=IoError reason=peer-timed-out' >&2; exit 1"),
      3, options, &report);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank(s) 1 had not timed out when rank 0 timed out waiting for a peer: "
                              "the likely culprit(s)"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(st.message().find("was stopped"), std::string::npos) << st.message();
  ExpectGone(report);
}

// Rank 1 stops after the job's work is done (rank 0 exits 0): without the
// straggler timeout the launcher would wait for it forever.
TEST(Launcher, RankStillRunningLongAfterAnotherFinishedFailsTheJob) {
  LaunchOptions options;
  options.sink = [](int, OutputStream, const std::string&) {};
  options.straggler_timeout = std::chrono::milliseconds(500);
  LaunchReport report;
  Status st = LaunchLocalRanks(Sh("if [ \"$RANK\" = 1 ]; then kill -STOP $$; fi; exit 0"), 2, options, &report);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank 1 (pid " + std::to_string(report.ranks[1].pid) + ") was stopped"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("rank(s) 1 still running 0.50 s after rank 0 finished"), std::string::npos)
      << st.message();
  EXPECT_TRUE(report.ranks[0].ok());
  ExpectGone(report);
}

// Rank 0 stops itself while rank 1 waits on something without a timeout:
// the stopped timeout names rank 0.
TEST(Launcher, RankStoppedForTheStoppedTimeoutFailsTheJob) {
  LaunchOptions options;
  options.sink = [](int, OutputStream, const std::string&) {};
  options.stopped_timeout = std::chrono::milliseconds(400);
  LaunchReport report;
  Status st = LaunchLocalRanks(Sh("if [ \"$RANK\" = 0 ]; then kill -STOP $$; fi; exec sleep 60"), 2, options,
                               &report);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank 0 (pid " + std::to_string(report.ranks[0].pid) + ") was stopped"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("it stayed stopped for 0.40 s"), std::string::npos) << st.message();
  EXPECT_TRUE(report.ranks[0].was_stopped);
  EXPECT_FALSE(report.ranks[1].was_stopped);
  ExpectGone(report);
}

// The wording of a rank's error decides nothing: a line that reads like a
// timeout, without a status record saying so, is an ordinary failure; the
// record itself is kept out of the rank's output and the message.
TEST(Launcher, OnlyTheStatusRecordSaysATimeout) {
  LaunchOptions options;
  std::mutex mu;
  std::vector<std::string> lines;
  options.sink = [&](int, OutputStream, const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back(line);
  };
  Status st = LaunchLocalRanks(
      Sh("if [ \"$RANK\" = 1 ]; then exec sleep 60; fi; "
         "echo 'recv failed after 0.50 s (timeout 0.50 s): Timed out waiting' >&2; "
         "echo 'pipewright-status: code=IoError reason=unspecified' >&2; exit 1"),
      2, options);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().find("timed out waiting for a peer"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("culprit"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("pipewright-status"), std::string::npos) << st.message();
  std::lock_guard<std::mutex> lock(mu);
  for (const std::string& line : lines) EXPECT_EQ(line.find("pipewright-status"), std::string::npos) << line;
  EXPECT_FALSE(lines.empty());
}

// Ranks are asked for a status record in their environment.
TEST(Launcher, RanksAreAskedForAStatusRecord) {
  LaunchOptions options;
  std::vector<std::string> lines;
  options.sink = [&](int, OutputStream, const std::string& line) { lines.push_back(line); };
  Status st = LaunchLocalRanks(Sh("echo \"record=$PIPEWRIGHT_STATUS_RECORD\""), 1, options);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "[rank 0] record=1");
}

// A failure that is not a timeout names no other culprit than itself.
TEST(Launcher, AFailureWithoutATimeoutIsItsOwnCulprit) {
  LaunchOptions options;
  options.sink = [](int, OutputStream, const std::string&) {};
  Status st = LaunchLocalRanks(
      Sh("if [ \"$RANK\" = 1 ]; then exec sleep 60; fi; echo 'bad input' >&2; exit 2"), 2, options);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("rank 0 (pid", 0), 0u) << st.message();
  EXPECT_EQ(st.message().find("culprit"), std::string::npos) << st.message();
}

// A rank that returns an error closes its sockets before it prints the
// error; a peer writing to it dies of SIGPIPE first. The launcher waits a
// moment for the cause and names it first.
TEST(Launcher, ARankThatOnlyLostAPeerIsNotNamedAsTheCause) {
  LaunchOptions options;
  options.sink = [](int, OutputStream, const std::string&) {};
  LaunchReport report;
  Status st = LaunchLocalRanks(
      Sh("case $RANK in 0) sleep 0.1; kill -PIPE $$;; "
         "1) sleep 0.5; echo 'checkpoint file x is corrupt' >&2; exit 1;; esac; exec sleep 60"),
      3, options, &report);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("rank 1 (pid", 0), 0u) << st.message();
  EXPECT_NE(st.message().find("then rank 0 was killed by signal SIGPIPE"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("[rank 1] checkpoint file x is corrupt"), std::string::npos) << st.message();
  EXPECT_TRUE(report.ranks[2].stopped_by_launcher);
  ExpectGone(report);
}

// When no cause shows up, the rank that lost its peer fails the job after
// the settling moment (about a second), not never.
TEST(Launcher, ALostPeerAloneStillStopsTheJob) {
  LaunchOptions options;
  options.sink = [](int, OutputStream, const std::string&) {};
  LaunchReport report;
  auto start = Clock::now();
  Status st = LaunchLocalRanks(
      Sh("if [ \"$RANK\" = 0 ]; then echo 'Read error: Connection reset by peer' >&2; "
         "echo 'pipewright-status: code=IoError reason=peer-lost' >&2; exit 1; fi; "
         "exec sleep 60"),
      2, options, &report);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("rank 0 (pid", 0), 0u) << st.message();
  EXPECT_TRUE(report.ranks[1].stopped_by_launcher);
  EXPECT_LT(Since(start), 5.0);
  ExpectGone(report);
}

TEST(Launcher, IgnoredSigtermEscalatesToSigkillAndKillsGrandchildren) {
  LaunchOptions options;
  options.sink = [](int, OutputStream, const std::string&) {};
  options.grace = std::chrono::milliseconds(500);
  LaunchReport report;
  auto start = Clock::now();
  // Rank 0 ignores SIGTERM (its children inherit that) and keeps a child
  // holding the output pipe; rank 1 fails.
  Status st = LaunchLocalRanks(
      Sh("if [ \"$RANK\" = 1 ]; then sleep 0.3; exit 1; fi; trap '' TERM; sleep 60 & "
         "while true; do sleep 0.1; done"),
      2, options, &report);
  double seconds = Since(start);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank 1"), std::string::npos);
  EXPECT_FALSE(report.ranks[0].exited);
  EXPECT_EQ(report.ranks[0].signal, SIGKILL);
  EXPECT_GE(seconds, 0.75);
  EXPECT_LT(seconds, 4.0);
  ExpectGone(report);
}

TEST(Launcher, SuccessfulJobLeavesNoBackgroundProcess) {
  LaunchOptions options;
  options.sink = [](int, OutputStream, const std::string&) {};
  LaunchReport report;
  auto start = Clock::now();
  Status st = LaunchLocalRanks(Sh("sleep 60 & echo started"), 2, options, &report);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_LT(Since(start), 3.0);
  ExpectGone(report);
}

TEST(Launcher, RanksInheritNoDescriptors) {
  int fd = dup(1);  // not close-on-exec
  ASSERT_GE(fd, 3);
  Captured captured;
  LaunchOptions options;
  options.sink = captured.Sink();
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  Status st = LaunchLocalRanks(
      Sh("if [ -e " + path + " ]; then echo leaked; else echo clean; fi"), 1, options);
  close(fd);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(captured.out, (std::vector<std::string>{"[rank 0] clean"}));
}

TEST(Launcher, BadArguments) {
  LaunchOptions options;
  EXPECT_EQ(LaunchLocalRanks({}, 2, options).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(LaunchLocalRanks(Sh("true"), 0, options).code(), StatusCode::kInvalidArgument);
  Status missing = LaunchLocalRanks({"/nonexistent/pw-rank"}, 1, options);
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("/nonexistent/pw-rank"), std::string::npos);
  EXPECT_EQ(LaunchLocalRanks({"pw-no-such-program-xyz"}, 1, options).code(),
            StatusCode::kInvalidArgument);
  options.master_addr = "not-an-ip";
  EXPECT_EQ(LaunchLocalRanks(Sh("true"), 1, options).code(), StatusCode::kInvalidArgument);
}

TEST(Launcher, RanksDieWithTheLauncher) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("pw_launcher_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    LaunchOptions options;
    options.sink = [](int, OutputStream, const std::string&) {};
    Status st = LaunchLocalRanks(
        Sh("echo $$ > " + dir.string() + "/rank$RANK.pid; exec sleep 60"), 2, options);
    _exit(st.ok() ? 0 : 1);
  }
  // Wait for both ranks to write their pid, then kill the launcher hard.
  std::vector<pid_t> pids;
  for (int attempt = 0; attempt < 100 && pids.size() < 2; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pids.clear();
    for (int r = 0; r < 2; ++r) {
      std::ifstream in(dir / ("rank" + std::to_string(r) + ".pid"));
      pid_t pid = 0;
      if (in >> pid && pid > 0) pids.push_back(pid);
    }
  }
  ASSERT_EQ(pids.size(), 2u);
  kill(launcher, SIGKILL);
  waitpid(launcher, nullptr, 0);
  // The ranks are now orphans (reparented, reaped by init or a subreaper).
  auto start = Clock::now();
  bool all_gone = false;
  while (!all_gone && Since(start) < 3.0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    all_gone = true;
    for (pid_t pid : pids) {
      // A zombie still answers kill(); check /proc state instead.
      std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
      std::string pid_text, comm, state;
      if (stat >> pid_text >> comm >> state && state != "Z") all_gone = false;
    }
  }
  EXPECT_TRUE(all_gone) << "ranks survived their launcher";
  std::filesystem::remove_all(dir);
}

TEST(SignalName, Names) {
  EXPECT_EQ(SignalName(SIGKILL), "SIGKILL");
  EXPECT_EQ(SignalName(SIGSEGV), "SIGSEGV");
  RankExit exit;
  exit.signal = SIGTERM;
  exit.stopped_by_launcher = true;
  EXPECT_EQ(exit.Describe(), "was killed by signal SIGTERM (Terminated) sent by the launcher");
}

}  // namespace
}  // namespace pw
