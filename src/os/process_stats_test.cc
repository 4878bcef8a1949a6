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

}  // namespace
}  // namespace pw
