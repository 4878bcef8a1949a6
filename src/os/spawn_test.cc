// Spawn: each setup step is read back from the child (/proc, sched_*,
// prlimit); a failing step is named in the error; descriptors and the
// environment reach the child exactly as asked.
#include "os/spawn.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "os/cpu.h"
#include "os/process_stats.h"

namespace pw {
namespace {

std::vector<std::string> Sh(const std::string& script) { return {"/bin/sh", "-c", script}; }

void KillAndReap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// Everything the child writes to fd 1, until it exits; its exit code.
std::pair<std::string, int> RunCapturingStdout(SpawnOptions options) {
  int out[2];
  EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
  options.fds.push_back({1, out[1]});
  Result<pid_t> pid = Spawn(options);
  close(out[1]);
  EXPECT_TRUE(pid.ok()) << pid.status().ToString();
  std::string text;
  char buffer[256];
  ssize_t n;
  while ((n = read(out[0], buffer, sizeof(buffer))) > 0) text.append(buffer, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  if (pid.ok()) waitpid(*pid, &status, 0);
  return {text, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

TEST(Spawn, ConfinementStepsAreAppliedToTheChild) {
  const std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  SpawnOptions o;
  o.argv = {"/bin/sleep", "30"};
  o.new_process_group = true;
  o.die_with_parent = true;
  o.reset_signals = true;
  o.address_space_limit_bytes = int64_t{1} << 30;
  o.cpu = cpus.back();
  o.idle_priority = true;
  Result<pid_t> pid = Spawn(o);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  EXPECT_EQ(getpgid(*pid), *pid) << "own process group";
  EXPECT_EQ(sched_getscheduler(*pid), SCHED_IDLE);
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER) << "the parent keeps its policy";
  cpu_set_t theirs;
  ASSERT_EQ(sched_getaffinity(*pid, sizeof(theirs), &theirs), 0);
  EXPECT_EQ(CPU_COUNT(&theirs), 1);
  EXPECT_TRUE(CPU_ISSET(o.cpu, &theirs));
  rlimit limit{};
  ASSERT_EQ(prlimit(*pid, RLIMIT_AS, nullptr, &limit), 0);
  EXPECT_EQ(limit.rlim_cur, static_cast<rlim_t>(o.address_space_limit_bytes));
  KillAndReap(*pid);
}

TEST(Spawn, WithoutStepsTheChildKeepsTheParentsSettings) {
  SpawnOptions o;
  o.argv = {"/bin/sleep", "30"};
  Result<pid_t> pid = Spawn(o);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  EXPECT_EQ(getpgid(*pid), getpgid(0)) << "same process group";
  EXPECT_EQ(sched_getscheduler(*pid), SCHED_OTHER);
  KillAndReap(*pid);
}

TEST(Spawn, ChildDiesWithItsParent) {
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t middle = fork();
  ASSERT_GE(middle, 0);
  if (middle == 0) {
    SpawnOptions o;
    o.argv = {"/bin/sleep", "60"};
    o.die_with_parent = true;
    Result<pid_t> pid = Spawn(o);
    const pid_t value = pid.ok() ? *pid : -1;
    (void)!write(report[1], &value, sizeof(value));
    pause();
    _exit(0);
  }
  close(report[1]);
  pid_t grandchild = -1;
  ASSERT_EQ(read(report[0], &grandchild, sizeof(grandchild)), static_cast<ssize_t>(sizeof(grandchild)));
  close(report[0]);
  ASSERT_GT(grandchild, 0);
  KillAndReap(middle);
  bool gone = false;
  for (int waited = 0; !gone && waited < 3000; waited += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const std::optional<ProcessStat> stat = ReadProcessStat(grandchild);
    gone = !stat || stat->state == 'Z';  // a zombie waits for its new parent
  }
  EXPECT_TRUE(gone) << "the child outlived its parent";
}

TEST(Spawn, StopBeforeExecRunsNothingUntilContinued) {
  SpawnOptions o;
  o.argv = Sh("exit 7");
  o.stop_before_exec = true;
  Result<pid_t> pid = Spawn(o);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  const std::optional<ProcessStat> stat = ReadProcessStat(*pid);
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->state, 'T') << "stopped before exec";
  kill(*pid, SIGCONT);
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7) << "the program ran after SIGCONT";
}

TEST(Spawn, DescriptorsAndEnvironmentAreExactlyTheGivenOnes) {
  const int leaky = fcntl(2, F_DUPFD, 100);  // not close-on-exec: must not reach the child
  ASSERT_GE(leaky, 100);
  int extra[2];
  ASSERT_EQ(pipe2(extra, O_CLOEXEC), 0);
  SpawnOptions o;
  o.argv = Sh("echo \"x=$PW_SPAWN_X home=${HOME:-unset}\"; "
              "[ -e /proc/self/fd/" + std::to_string(leaky) + " ] && echo leaked || echo clean; "
              "[ -e /proc/self/fd/3 ] && echo has3; readlink /proc/self/fd/0");
  o.env = std::vector<std::string>{"PW_SPAWN_X=42", "PATH=/usr/bin:/bin"};
  o.stdin_from_dev_null = true;
  o.fds = {{3, extra[0]}};
  auto [text, code] = RunCapturingStdout(o);
  close(leaky);
  close(extra[0]);
  close(extra[1]);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(text, "x=42 home=unset\nclean\nhas3\n/dev/null\n");
}

TEST(Spawn, InheritsTheEnvironmentByDefault) {
  setenv("PW_SPAWN_INHERITED", "yes", 1);
  SpawnOptions o;
  o.argv = Sh("echo $PW_SPAWN_INHERITED");
  EXPECT_EQ(RunCapturingStdout(o).first, "yes\n");
  unsetenv("PW_SPAWN_INHERITED");
}

TEST(Spawn, FailingStepIsNamedAndNoChildIsLeft) {
  SpawnOptions o;
  o.argv = {"/bin/true"};
  o.cpu = CPU_SETSIZE - 1;  // no machine here has 1024 cpus
  ASSERT_LT(ConfiguredCpuCount(), CPU_SETSIZE);
  Result<pid_t> pid = Spawn(o);
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), StatusCode::kIoError);
  EXPECT_NE(pid.status().message().find("sched_setaffinity to cpu " + std::to_string(CPU_SETSIZE - 1) + " failed"),
            std::string::npos)
      << pid.status().message();
  errno = 0;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1) << "the failed child was reaped";
  EXPECT_EQ(errno, ECHILD);

  // A descriptor to hand over that is not open.
  o.cpu = -1;
  o.fds = {{3, 1 << 20}};
  pid = Spawn(o);
  ASSERT_FALSE(pid.ok());
  EXPECT_NE(pid.status().message().find("dup2 of the child's descriptors failed in the child: Bad file descriptor"),
            std::string::npos)
      << pid.status().message();

  o.fds.clear();
  o.cpu = CPU_SETSIZE;
  EXPECT_EQ(Spawn(o).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Spawn(SpawnOptions{}).status().code(), StatusCode::kInvalidArgument);
}

TEST(Spawn, MissingProgramIsNotFound) {
  SpawnOptions o;
  o.argv = {"/nonexistent/pw-program"};
  Result<pid_t> pid = Spawn(o);
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), StatusCode::kNotFound);
  EXPECT_NE(pid.status().message().find("exec of '/nonexistent/pw-program' failed"), std::string::npos)
      << pid.status().message();
}

TEST(FindExecutable, SearchesPathOnlyForBareNames) {
  EXPECT_EQ(FindExecutable("/bin/sh"), std::optional<std::string>("/bin/sh"));
  std::optional<std::string> sh = FindExecutable("sh");
  ASSERT_TRUE(sh.has_value());
  EXPECT_EQ(access(sh->c_str(), X_OK), 0);
  EXPECT_FALSE(FindExecutable("pw-no-such-program-xyz").has_value());
  EXPECT_FALSE(FindExecutable("/nonexistent/sh").has_value());
  const std::string plain = testing::TempDir() + "pw_find_executable_plain";
  { std::ofstream(plain) << "not a program\n"; }
  chmod(plain.c_str(), 0644);
  EXPECT_FALSE(FindExecutable(plain).has_value()) << "not executable";
  unlink(plain.c_str());
}

}  // namespace
}  // namespace pw
