#include "os/signals.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "os/process_stats.h"
#include "os/spawn.h"

namespace pw {
namespace {

TEST(Signals, Names) {
  EXPECT_EQ(SignalName(SIGABRT), "SIGABRT");
  EXPECT_EQ(SignalName(SIGKILL), "SIGKILL");
  EXPECT_EQ(SignalName(200), "signal 200");
  EXPECT_EQ(SignalDescription(SIGABRT), "Aborted");
  EXPECT_EQ(SignalDescription(200), "");
}

TEST(Signals, GroupSignalReachesWhatTheChildStarted) {
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "sleep 60 & echo $!; wait"};
  o.new_process_group = true;
  o.fds = {{1, out[1]}};
  Result<pid_t> pid = Spawn(o);
  close(out[1]);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  char buffer[32] = {};
  ASSERT_GT(read(out[0], buffer, sizeof(buffer) - 1), 0);
  close(out[0]);
  const pid_t grandchild = static_cast<pid_t>(std::atoi(buffer));
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(SignalProcessGroup(*pid, SIGKILL));
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  bool gone = false;
  for (int waited = 0; !gone && waited < 3000; waited += 10) {
    const std::optional<ProcessStat> stat = ReadProcessStat(grandchild);
    gone = !stat || stat->state == 'Z';
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "the grandchild in the group survived";
  EXPECT_FALSE(SignalProcessGroup(0, SIGKILL)) << "never this process's own group";
}

}  // namespace
}  // namespace pw
