#include "os/cpu.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace pw {
namespace {

TEST(Cpu, AllowedCpusAreAscendingAndExist) {
  const std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  for (size_t i = 1; i < cpus.size(); ++i) EXPECT_LT(cpus[i - 1], cpus[i]);
  EXPECT_LT(cpus.back(), ConfiguredCpuCount());
}

// In a forked child (pinning the test process would slow every other test):
// a thread started before the pin and one started after both end up on the
// chosen cpu. Exit code 0 when all checks pass.
TEST(Cpu, PinProcessPinsEveryThread) {
  const int cpu = AllowedCpus().back();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::atomic<pid_t> tid{0};
    std::atomic<bool> quit{false};
    std::thread before([&] {
      tid = static_cast<pid_t>(syscall(SYS_gettid));
      while (!quit) std::this_thread::yield();
    });
    while (tid == 0) std::this_thread::yield();
    int code = PinProcessToCpu(cpu).ok() ? 0 : 1;
    cpu_set_t set;
    if (sched_getaffinity(tid, sizeof(set), &set) != 0 || CPU_COUNT(&set) != 1 || !CPU_ISSET(cpu, &set)) code |= 2;
    std::thread after([&] {
      cpu_set_t mine;
      if (sched_getaffinity(0, sizeof(mine), &mine) != 0 || CPU_COUNT(&mine) != 1 || !CPU_ISSET(cpu, &mine)) code |= 4;
    });
    after.join();
    quit = true;
    before.join();
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: pin failed, 2: earlier thread not pinned, 4: later thread not pinned";
}

TEST(Cpu, LocalRanksGetDistinctCpusOnlyWhenTheyFit) {
  const std::vector<int> cpus = AllowedCpus();
  const int n = static_cast<int>(cpus.size());
  for (int r = 0; r < n; ++r) EXPECT_EQ(CpuForLocalRank(r, n), cpus[r]);
  EXPECT_EQ(CpuForLocalRank(0, n + 1), -1);  // more ranks than CPUs: the OS places them
  EXPECT_EQ(CpuForLocalRank(0, 0), -1);      // unknown count
  EXPECT_EQ(CpuForLocalRank(n, n), -1);
  EXPECT_EQ(CpuForLocalRank(-1, n), -1);
}

TEST(Cpu, PinRejectsImpossibleCpus) {
  EXPECT_EQ(PinProcessToCpu(-1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(PinProcessToCpu(CPU_SETSIZE).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pw
