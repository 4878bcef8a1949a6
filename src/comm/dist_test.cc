// Multi-process tests: ranks of pw_comm_rank_helper (tools/rank_helper.cc)
// launched on loopback by LaunchLocalRanks, one thread each. Every test
// bounds its job with a launcher timeout, so a regression fails, not hangs.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "comm/launcher.h"
#include "os/reserved_port.h"

namespace pw {
namespace {

using Clock = std::chrono::steady_clock;

struct Job {
  Status status;
  LaunchReport report;
  std::vector<std::string> out;  // prefixed stdout lines
  std::vector<std::string> err;
  double seconds = 0;

  bool HasLine(const std::string& text) const {
    for (const auto& line : out) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }
  std::string Output() const {
    std::string text;
    for (const auto& line : out) text += line + "\n";
    for (const auto& line : err) text += line + "\n";
    return text;
  }
};

Job RunJob(int world_size, std::vector<std::string> args, int timeout_ms = 20000,
           int grace_ms = 1000,
           std::vector<std::pair<std::string, std::string>> env = {}) {
  Job job;
  std::vector<std::string> argv = {PW_COMM_RANK_HELPER};
  argv.insert(argv.end(), args.begin(), args.end());
  LaunchOptions options;
  options.timeout = std::chrono::milliseconds(timeout_ms);
  options.grace = std::chrono::milliseconds(grace_ms);
  options.env = std::move(env);
  options.sink = [&job](int, OutputStream stream, const std::string& line) {
    (stream == OutputStream::kStdout ? job.out : job.err).push_back(line);
  };
  auto start = Clock::now();
  job.status = LaunchLocalRanks(argv, world_size, options, &job.report);
  job.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return job;
}

// Every other rank ended within `seconds` of the failed rank's exit (run
// times are measured from each rank's start; ranks start within ms).
void ExpectStoppedSoonAfter(const Job& job, int failed, double seconds) {
  double failed_at = job.report.ranks[failed].seconds;
  for (const auto& r : job.report.ranks) {
    EXPECT_LT(r.seconds - failed_at, seconds) << "rank " << r.rank << " outlived rank "
                                              << failed << " by too long";
  }
}

void ExpectAllReaped(const Job& job) {
  for (const auto& r : job.report.ranks) {
    EXPECT_EQ(kill(r.pid, 0), -1) << "rank " << r.rank << " is still alive";
  }
}

TEST(Dist, RingP2pTwoRanks) {
  Job job = RunJob(2, {"ring"});
  ASSERT_TRUE(job.status.ok()) << job.status.ToString() << "\n" << job.Output();
  EXPECT_TRUE(job.HasLine("[rank 0] ring ok rank=0 size=2"));
  EXPECT_TRUE(job.HasLine("[rank 1] ring ok rank=1 size=2"));
}

TEST(Dist, RingP2pFourRanks) {
  Job job = RunJob(4, {"ring"});
  ASSERT_TRUE(job.status.ok()) << job.status.ToString() << "\n" << job.Output();
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(job.HasLine("[rank " + std::to_string(r) + "] ring ok")) << job.Output();
  }
}

TEST(Dist, GridTwoByTwoAllReduceAndServingGroup) {
  Job job = RunJob(4, {"grid", "pp=2", "serving=1"});
  ASSERT_TRUE(job.status.ok()) << job.status.ToString() << "\n" << job.Output();
  // world rank = dp_rank * pp + pp_rank
  EXPECT_TRUE(job.HasLine("[rank 0] grid ok rank=0 pp_rank=0 dp_rank=0 serving=1"));
  EXPECT_TRUE(job.HasLine("[rank 1] grid ok rank=1 pp_rank=1 dp_rank=0 serving=1"));
  EXPECT_TRUE(job.HasLine("[rank 2] grid ok rank=2 pp_rank=0 dp_rank=1 serving=1"));
  EXPECT_TRUE(job.HasLine("[rank 3] grid ok rank=3 pp_rank=1 dp_rank=1 serving=1"));
}

TEST(Dist, JoinsAStoreHostedByTheLauncherLikeTorchrun) {
  // This process plays torchrun's agent: it hosts the TCPStore, and holds a
  // stale key of an earlier attempt that the ranks must not see.
  // Reserved, so no other test's port choice takes it before the store binds.
  Result<ReservedPort> port = ReservedPort::On("127.0.0.1");
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<uint16_t>(port->port());
  store_options.isServer = true;
  store_options.waitWorkers = false;
  store_options.timeout = std::chrono::seconds(20);
  auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", store_options);
  store->set("/worker/attempt_0/world/pw_joined/1", std::vector<uint8_t>{1});
  Job job = RunJob(2, {"ring"}, 20000, 1000,
                   {{"MASTER_PORT", std::to_string(port->port())},
                    {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                    {"TORCHELASTIC_RESTART_COUNT", "1"}});
  ASSERT_TRUE(job.status.ok()) << job.status.ToString() << "\n" << job.Output();
  EXPECT_TRUE(job.HasLine("[rank 1] ring ok"));
  // The ranks' keys are under the attempt-1 prefix.
  EXPECT_TRUE(store->check({"/worker/attempt_1/world/pw_joined/0"}));
}

TEST(Dist, MissingRankFailsTheRendezvousAndIsNamed) {
  // Two ranks expect a world of three: rank 2 never comes.
  Job job = RunJob(2, {"ring", "rendezvous_ms=2000"}, 20000, 1000, {{"WORLD_SIZE", "3"}});
  ASSERT_FALSE(job.status.ok()) << job.Output();
  EXPECT_NE(job.status.message().find("world rank(s) 2 did not join group 'world' within "
                                      "2000 ms"),
            std::string::npos)
      << job.status.message();
  EXPECT_LT(job.seconds, 10.0);
}

TEST(Dist, RecvFromADeadPeerFailsWithinTheTimeout) {
  Job job = RunJob(2, {"peer-exit", "op=recv", "timeout_ms=3000"});
  ASSERT_TRUE(job.status.ok()) << job.status.ToString() << "\n" << job.Output();
  EXPECT_TRUE(job.HasLine("[rank 1] peer-exit recv: error=1")) << job.Output();
  std::printf("%s", job.Output().c_str());
}

TEST(Dist, AllReduceWithADeadPeerFailsWithinTheTimeout) {
  Job job = RunJob(2, {"peer-exit", "op=allreduce", "timeout_ms=3000"});
  ASSERT_TRUE(job.status.ok()) << job.status.ToString() << "\n" << job.Output();
  EXPECT_TRUE(job.HasLine("[rank 1] peer-exit allreduce: error=1")) << job.Output();
  std::printf("%s", job.Output().c_str());
}

// ProcessGroupsOptions::exit_after_failure: a rank whose teardown hangs
// after a failed wait exits 5 s later with the failure as its message.
TEST(Dist, ARankStuckAfterAFailureExitsWithinItsDeadline) {
  Job job = RunJob(2, {"stuck-after-failure", "timeout_ms=2000", "exit_after_failure=1"}, 30000);
  EXPECT_FALSE(job.status.ok()) << job.Output();
  EXPECT_TRUE(job.HasLine("[rank 1] stuck-after-failure: error=1; now hanging")) << job.Output();
  bool named = false;
  for (const std::string& line : job.err) {
    named = named || line.find("the rank had not exited 5 s after this failure; exiting") != std::string::npos;
  }
  EXPECT_TRUE(named) << job.Output();
  EXPECT_EQ(job.report.ranks[1].exit_code, 1) << job.Output();
  EXPECT_LT(job.seconds, 15.0) << "the 60 s hang was not cut short";
}

TEST(Dist, RecvFromASilentPeerTimesOut) {
  Job job = RunJob(2, {"peer-silent", "timeout_ms=1500"});
  ASSERT_TRUE(job.status.ok()) << job.status.ToString() << "\n" << job.Output();
  EXPECT_TRUE(job.HasLine("[rank 1] peer-silent: error=1")) << job.Output();
  std::printf("%s", job.Output().c_str());
}

TEST(Dist, WaitingForAMessageDoesNotSpin) {
  Job job = RunJob(2, {"idle-wait"});
  ASSERT_TRUE(job.status.ok()) << job.status.ToString() << "\n" << job.Output();
  double cpu_ms = -1;
  for (const auto& line : job.out) {
    size_t at = line.find("cpu=");
    if (line.find("idle-wait") != std::string::npos && at != std::string::npos) {
      cpu_ms = std::atof(line.c_str() + at + 4);
      std::printf("%s\n", line.c_str());
    }
  }
  ASSERT_GE(cpu_ms, 0) << job.Output();
  EXPECT_LT(cpu_ms, 200.0) << "a 2 s wait burned CPU: " << job.Output();
}

TEST(Dist, RankExitingWithCodeThreeFailsTheJobFast) {
  Job job = RunJob(4, {"fail", "bad=1", "mode=exit3", "timeout_ms=60000"});
  ASSERT_FALSE(job.status.ok()) << job.Output();
  const std::string& m = job.status.message();
  EXPECT_NE(m.find("rank 1 (pid"), std::string::npos) << m;
  EXPECT_NE(m.find("exited with code 3"), std::string::npos) << m;
  EXPECT_NE(m.find("[rank 1] rank 1 about to fail: exit3"), std::string::npos) << m;
  EXPECT_LT(job.seconds, 15.0);
  for (int r : {0, 2, 3}) EXPECT_TRUE(job.report.ranks[r].stopped_by_launcher) << r;
  ExpectStoppedSoonAfter(job, 1, 2.0);
  ExpectAllReaped(job);
}

TEST(Dist, RankAbortingFailsTheJobFast) {
  Job job = RunJob(2, {"fail", "bad=0", "mode=abort", "timeout_ms=60000"});
  ASSERT_FALSE(job.status.ok()) << job.Output();
  const std::string& m = job.status.message();
  EXPECT_NE(m.find("rank 0 (pid"), std::string::npos) << m;
  EXPECT_NE(m.find("SIGABRT"), std::string::npos) << m;
  EXPECT_LT(job.seconds, 15.0);
  ExpectStoppedSoonAfter(job, 0, 2.0);
  ExpectAllReaped(job);
}

// The hanging rank is named whether or not the others finished before the
// timeout (they may not have, on a loaded machine: "rank(s) 0, 1 still running").
TEST(Dist, HangingRankHitsTheJobTimeout) {
  Job job = RunJob(2, {"fail", "bad=1", "mode=hang"}, /*timeout_ms=*/9000);
  ASSERT_FALSE(job.status.ok()) << job.Output();
  const std::string& m = job.status.message();
  EXPECT_NE(m.find("job timed out after 9.00 s"), std::string::npos) << m;
  EXPECT_NE(m.find("1 still running"), std::string::npos) << m;
  EXPECT_TRUE(job.report.ranks[1].stopped_by_launcher);
  EXPECT_EQ(job.report.ranks[1].signal, SIGTERM);
  EXPECT_LT(job.seconds, 12.0);
  ExpectAllReaped(job);
}

TEST(Dist, HangingRankIgnoringSigtermIsKilled) {
  Job job = RunJob(2, {"fail", "bad=1", "mode=hang-ignore-term"}, /*timeout_ms=*/9000,
                   /*grace_ms=*/500);
  ASSERT_FALSE(job.status.ok()) << job.Output();
  EXPECT_NE(job.status.message().find("1 still running"), std::string::npos);
  const RankExit& hung = job.report.ranks[1];
  bool ignoring = false;  // it reached signal(SIGTERM, SIG_IGN) before the timeout
  for (const auto& line : hung.stderr_tail) {
    ignoring |= line.find("about to fail") != std::string::npos;
  }
  if (ignoring) {
    EXPECT_EQ(hung.signal, SIGKILL) << "SIGTERM was ignored, so SIGKILL";
  }
  EXPECT_TRUE(hung.stopped_by_launcher);
  EXPECT_LT(job.seconds, 12.0);
  ExpectAllReaped(job);
}

}  // namespace
}  // namespace pw
