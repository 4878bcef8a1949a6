#include "os/process_stats.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "os/spawn.h"

namespace pw {
namespace {

TEST(ProcessStats, ParsesNamesWithSpacesAndParentheses) {
  const double tick = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  std::optional<ProcessStat> s =
      ParseProcessStat("4242 (a) b (c)) T 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 99\n");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, 'T');
  EXPECT_EQ(s->ppid, 17);
  EXPECT_EQ(s->pgrp, 4242);
  EXPECT_DOUBLE_EQ(s->user_seconds, 250 * tick);
  EXPECT_DOUBLE_EQ(s->system_seconds, 50 * tick);
  EXPECT_DOUBLE_EQ(s->children_seconds, 10 * tick);
  EXPECT_DOUBLE_EQ(s->cpu_seconds(), 310 * tick);
  EXPECT_EQ(s->resident_bytes, 0) << "the line stops before rss";
  std::optional<ProcessStat> with_rss = ParseProcessStat(
      "7 (x) S 1 7 7 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 99 123456789 250 18446744073709551615\n");
  ASSERT_TRUE(with_rss.has_value());
  EXPECT_EQ(with_rss->resident_bytes, 250 * sysconf(_SC_PAGESIZE));
  EXPECT_FALSE(ParseProcessStat("").has_value());
  EXPECT_FALSE(ParseProcessStat("1 (x) S 1 1").has_value()) << "truncated";
  EXPECT_FALSE(ParseProcessStat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 ab 0 0 0").has_value()) << "not a number";
}

TEST(ProcessStats, ReadsThisProcess) {
  std::optional<ProcessStat> self = ReadProcessStat(getpid());
  ASSERT_TRUE(self.has_value());
  EXPECT_EQ(self->state, 'R');
  EXPECT_EQ(self->ppid, getppid());
  EXPECT_EQ(self->pgrp, getpgid(0));
  EXPECT_FALSE(ReadProcessStat(0).has_value());
  EXPECT_FALSE(ReadProcessStat(-1).has_value());
}

TEST(ProcessStats, BusyChildGainsCpuTimeAndIsGoneOnceReaped) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "while :; do :; done"};
  Result<pid_t> pid = Spawn(o);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  std::optional<ProcessStat> first = ReadProcessStat(*pid);
  ASSERT_TRUE(first.has_value());
  double cpu = first->cpu_seconds();
  for (int waited = 0; cpu <= first->cpu_seconds() && waited < 10000; waited += 20) {  // shared machine
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::optional<ProcessStat> now = ReadProcessStat(*pid);
    ASSERT_TRUE(now.has_value());
    cpu = now->cpu_seconds();
  }
  EXPECT_GT(cpu, first->cpu_seconds());
  kill(*pid, SIGSTOP);
  char state = 0;
  for (int waited = 0; state != 'T' && waited < 5000; waited += 5) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    state = ReadProcessStat(*pid).value_or(ProcessStat{}).state;
  }
  EXPECT_EQ(state, 'T');
  kill(*pid, SIGKILL);
  waitpid(*pid, nullptr, 0);
  EXPECT_FALSE(ReadProcessStat(*pid).has_value());
}

// A side task's children share its process group: the group's usage counts
// them, sees them stopped, and sums their memory.
TEST(ProcessStats, GroupUsageCountsEveryProcessOfTheGroup) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "sleep 30 & sleep 30 & wait"};
  o.new_process_group = true;
  Result<pid_t> pid = Spawn(o);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  ProcessGroupUsage usage;
  for (int waited = 0; usage.processes < 3 && waited < 10000; waited += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    usage = ReadProcessGroupUsage(*pid);
  }
  EXPECT_EQ(usage.processes, 3) << "the shell and its two sleeps";
  EXPECT_GT(usage.resident_bytes, 0);
  EXPECT_GT(usage.private_bytes, 0);
  EXPECT_LE(usage.private_bytes, usage.resident_bytes);
  kill(-*pid, SIGSTOP);
  for (int waited = 0; usage.stopped < 3 && waited < 5000; waited += 5) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    usage = ReadProcessGroupUsage(*pid);
  }
  EXPECT_EQ(usage.stopped, 3);
  kill(-*pid, SIGKILL);
  waitpid(*pid, nullptr, 0);
  for (int waited = 0; usage.processes > 0 && waited < 5000; waited += 5) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    usage = ReadProcessGroupUsage(*pid);  // the sleeps are reaped by init
  }
  EXPECT_EQ(usage.processes, 0);
  EXPECT_EQ(ReadProcessGroupUsage(0).processes, 0);
}

}  // namespace
}  // namespace pw
