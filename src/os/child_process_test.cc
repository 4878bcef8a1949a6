// ChildProcess: the pidfd turns readable at exit, TryReap reports the code
// or the signal once, a failed setup step is reported as a typed value, and
// destroying a running child kills and reaps it.
#include "os/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>

#include "os/poll.h"

namespace pw {
namespace {

SpawnOptions Shell(const std::string& script) {
  SpawnOptions options;
  options.argv = {"/bin/sh", "-c", script};
  options.new_process_group = true;
  return options;
}

TEST(ChildProcessTest, ReportsTheExitCodeAndItsPidfdWakesAPoll) {
  Result<ChildProcess> child = ChildProcess::Start(Shell("exit 3"));
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  if (child->pidfd() >= 0) {
    EXPECT_TRUE(WaitReadable(child->pidfd(), 5000));
  }
  const ExitStatus exit = child->Wait();
  EXPECT_TRUE(exit.exited);
  EXPECT_EQ(exit.exit_code, 3);
  EXPECT_TRUE(child->reaped());
  EXPECT_EQ(child->pidfd(), -1);
}

TEST(ChildProcessTest, TryReapWaitsForTheSignal) {
  Result<ChildProcess> child = ChildProcess::Start(Shell("sleep 30"));
  ASSERT_TRUE(child.ok());
  EXPECT_FALSE(child->TryReap().has_value());
  child->SignalGroup(SIGTERM);
  const ExitStatus exit = child->Wait();
  EXPECT_FALSE(exit.exited);
  EXPECT_EQ(exit.signal, SIGTERM);
}

TEST(ChildProcessTest, NamesTheFailedStepAsAValue) {
  SpawnOptions options = Shell("true");
  options.cpu = CPU_SETSIZE - 1;  // exists in the mask, not on this machine
  std::optional<ChildSetup> step;
  Result<ChildProcess> child = ChildProcess::Start(options, &step);
  ASSERT_FALSE(child.ok());
  ASSERT_TRUE(step.has_value());
  EXPECT_EQ(*step, ChildSetup::kPinToCpu);
}

TEST(ChildProcessTest, DestroyingARunningChildKillsAndReapsIt) {
  pid_t pid = -1;
  {
    Result<ChildProcess> child = ChildProcess::Start(Shell("sleep 30"));
    ASSERT_TRUE(child.ok());
    pid = child->pid();
  }
  EXPECT_EQ(kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
}

}  // namespace
}  // namespace pw
