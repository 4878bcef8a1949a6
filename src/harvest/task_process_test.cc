// TaskProcess: each built-in in its own host process (pw_side_task_host),
// gated by Resume/Pause; budgets; crashes, failures and the memory limit
// contained and reported; imperative commands stopped and continued with
// signals; SCHED_IDLE, affinity and RLIMIT_AS really applied to the child.
#include "harvest/task_process.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "harvest/task_host.h"
#include "harvest/task_output.h"
#include "os/process_stats.h"

namespace pw {
namespace {

using std::chrono::milliseconds;

// Tests run their tasks at normal priority: on a shared, busy machine a
// SCHED_IDLE task may wait seconds for a core. IdlePriorityAffinityAndLimitAreApplied
// checks that SCHED_IDLE is applied; the rest check behaviour.
TaskProcessOptions HostOptions() {
  TaskProcessOptions o;
  o.host_binary = PW_SIDE_TASK_HOST;
  o.idle_priority = false;
  return o;
}

int FirstAllowedCpu() {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  sched_getaffinity(0, sizeof(mine), &mine);
  int cpu = 0;
  while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &mine)) ++cpu;
  return cpu;
}

TaskProcessOptions CommandOptions() {
  TaskProcessOptions o;
  o.idle_priority = false;
  return o;
}

SideTaskSpec Spec(const std::string& text) {
  Result<SideTaskSpec> spec = ParseSideTaskSpec(text);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : SideTaskSpec{};
}

SideTaskSpec Command(const std::string& command) {
  SideTaskSpec spec;
  spec.name = "cmd";
  spec.command = command;
  return spec;
}

// Polls until `done(report)` (generous limit: the machine is shared).
TaskProcessReport WaitFor(TaskProcess& p, const std::function<bool(const TaskProcessReport&)>& done,
                          int limit_ms = 30000) {
  TaskProcessReport r = p.Poll();
  for (int waited = 0; !done(r) && waited < limit_ms; waited += 2) {
    std::this_thread::sleep_for(milliseconds(2));
    r = p.Poll();
  }
  return r;
}

char StateOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() ? '?' : text[paren + 2];
}

// The process is gone and reaped: not our child any more, no zombie.
void ExpectReaped(pid_t pid) {
  errno = 0;
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
  EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(pid)));
}

class BuiltinProcessTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BuiltinProcessTest, GatedByResumeAndPause) {
  Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Spec(GetParam()), HostOptions());
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  TaskProcess& p = **started;
  TaskProcessReport r = p.Poll();
  EXPECT_EQ(r.state, SideTaskState::kPaused);
  EXPECT_EQ(r.steps, 2) << "two calibration steps during Start";
  EXPECT_GT(r.step_us, 0);
  const double work_per_step = r.work / 2;
  EXPECT_GT(work_per_step, 0);

  // Paused: no progress across a sleep.
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_EQ(p.Poll().steps, 2);

  // Resumed without a bound: runs.
  p.Resume(0);
  r = WaitFor(p, [](const TaskProcessReport& x) { return x.steps >= 6; });
  EXPECT_GE(r.steps, 6);
  EXPECT_EQ(r.state, SideTaskState::kRunning);

  // Paused: acked after the current step, then no progress.
  p.Pause();
  r = WaitFor(p, [](const TaskProcessReport& x) { return x.pauses == 1; });
  ASSERT_EQ(r.pauses, 1);
  EXPECT_EQ(r.state, SideTaskState::kPaused);
  EXPECT_GT(r.pause_latency_max_us, 0);
  EXPECT_GE(r.pause_latency_max_us, r.pause_latency_mean_us);
  const int64_t steps = r.steps;
  std::this_thread::sleep_for(milliseconds(150));
  r = p.Poll();
  EXPECT_EQ(r.steps, steps);
  if (GetParam().rfind("pagerank", 0) != 0) {  // pagerank's slices vary in edges
    EXPECT_DOUBLE_EQ(r.work, work_per_step * static_cast<double>(steps)) << "fixed work per step";
  }
  EXPECT_GT(r.run_seconds, 0);

  const pid_t pid = p.pid();
  r = p.Stop();
  EXPECT_EQ(r.state, SideTaskState::kStopped);
  EXPECT_EQ(r.failure, "") << "removed, not failed";
  ExpectReaped(pid);
}

INSTANTIATE_TEST_SUITE_P(Builtins, BuiltinProcessTest,
                         ::testing::Values("cnn", "pagerank:scale=12", "image:width=128,height=128"),
                         [](const auto& info) { return info.param.substr(0, info.param.find(':')); });

TEST(TaskProcessTest, NoStepStartsWhenTheBudgetIsShorterThanAStep) {
  Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Spec("cnn"), HostOptions());
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  TaskProcess& p = **started;
  const TaskProcessReport before = p.Poll();
  ASSERT_GT(before.step_us, 1.0);
  p.Resume(/*budget_us=*/0.5);  // far less than margin x step time
  TaskProcessReport r = WaitFor(p, [](const TaskProcessReport& x) { return x.state == SideTaskState::kRunning; });
  ASSERT_EQ(r.state, SideTaskState::kRunning) << "resumed";
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_EQ(p.Poll().steps, before.steps) << "no step may start that would overrun the bubble";

  // A budget of many steps runs some, then stops starting new ones by itself.
  p.Resume(/*budget_us=*/200e3);
  r = WaitFor(p, [&](const TaskProcessReport& x) { return x.steps > before.steps; });
  EXPECT_GT(r.steps, before.steps);
  std::this_thread::sleep_for(milliseconds(600));  // past the 200 ms budget
  const int64_t settled = p.Poll().steps;
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_EQ(p.Poll().steps, settled) << "budget spent: no more steps until the next Resume";
}

// A bubble too short for a whole step but long enough for parts of one:
// the host runs parts (cnn: 8 parts of 32 images of a 256-image minibatch)
// instead of leaving the bubble unused, and never more than fit.
TEST(TaskProcessTest, ABubbleShorterThanAStepRunsPartsOfOne) {
  Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Spec("cnn:batch=256,parts=8"), HostOptions());
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  TaskProcess& p = **started;
  const TaskProcessReport before = p.Poll();
  ASSERT_GT(before.step_us, 1.0);
  EXPECT_EQ(before.partial_steps, 0) << "calibration runs whole steps";
  // Half a step's time: a whole step (x1.2 margin) cannot start; about
  // three parts (each at least an eighth of a step) can.
  const double budget_us = 0.5 * before.step_us;
  TaskProcessReport r = before;
  for (int bubble = 0; bubble < 20 && r.partial_steps < 4; ++bubble) {
    p.Resume(budget_us);
    std::this_thread::sleep_for(milliseconds(static_cast<int64_t>(budget_us / 1000) + 20));
    p.Pause();
    r = WaitFor(p, [](const TaskProcessReport& x) { return x.state == SideTaskState::kPaused; });
  }
  EXPECT_GE(r.partial_steps, 4) << "parts ran in bubbles shorter than a step";
  EXPECT_EQ(r.steps - before.steps, r.partial_steps) << "no whole step started in a short bubble";
  const double images = r.work - before.work;
  EXPECT_EQ(std::fmod(images, 32.0), 0.0) << "work comes in parts of 32 images";
  EXPECT_GE(images, 32.0 * static_cast<double>(r.partial_steps));
}

TEST(TaskProcessTest, StartRunningWhenNotGated) {
  TaskProcessOptions o = HostOptions();
  o.start_paused = false;
  Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Spec("pagerank:scale=10"), o);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  TaskProcessReport r = WaitFor(**started, [](const TaskProcessReport& x) { return x.steps >= 5; });
  EXPECT_GE(r.steps, 5);
}

TEST(TaskProcessTest, FinishedTaskReportsFinished) {
  TaskProcessOptions o = HostOptions();
  o.start_paused = false;
  Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Spec("pagerank:scale=6,iters=3"), o);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  TaskProcessReport r = WaitFor(**started, [](const TaskProcessReport& x) { return x.state == SideTaskState::kFinished; });
  EXPECT_EQ(r.state, SideTaskState::kFinished);
  r = (*started)->Stop();
  EXPECT_EQ(r.state, SideTaskState::kFinished);
  EXPECT_EQ(r.failure, "");
}

TEST(TaskProcessTest, CrashIsContainedAndReported) {
  TaskProcessOptions o = HostOptions();
  o.start_paused = false;
  Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Spec("cnn:crash_after=3"), o);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  const pid_t pid = (*started)->pid();
  TaskProcessReport r = WaitFor(**started, [](const TaskProcessReport& x) { return x.state == SideTaskState::kStopped; });
  ASSERT_EQ(r.state, SideTaskState::kStopped);
  EXPECT_NE(r.failure.find("killed by signal " + std::to_string(SIGABRT)), std::string::npos) << r.failure;
  EXPECT_GE(r.steps, 1);
  ExpectReaped(pid);
  // Resume/Pause on a dead task are harmless no-ops.
  (*started)->Resume(0);
  (*started)->Pause();
  EXPECT_EQ((*started)->Poll().state, SideTaskState::kStopped);
}

TEST(TaskProcessTest, HungStepShowsAsUnackedPauseAndStopKillsIt) {
  Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Spec("image:width=32,height=32,hang_after=3"),
                                                                    HostOptions());
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  TaskProcess& p = **started;
  const pid_t pid = p.pid();
  p.Resume(0);
  TaskProcessReport r = WaitFor(p, [](const TaskProcessReport& x) { return x.state == SideTaskState::kRunning; });
  ASSERT_EQ(r.state, SideTaskState::kRunning);
  std::this_thread::sleep_for(milliseconds(50));
  p.Pause();  // the host is stuck inside step 4 and never acknowledges
  std::this_thread::sleep_for(milliseconds(100));
  r = p.Poll();
  EXPECT_EQ(r.pauses, 0);
  EXPECT_GE(r.unacked_pause_us, 100e3);
  r = p.Stop(/*grace_ms=*/100);  // STOP is never read either: SIGKILL after the grace
  EXPECT_EQ(r.state, SideTaskState::kStopped);
  ExpectReaped(pid);
}

TEST(TaskProcessTest, StepErrorIsReportedWithTheTasksMessage) {
  TaskProcessOptions o = HostOptions();
  o.start_paused = false;
  Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Spec("image:width=32,height=32,fail_after=4"), o);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  TaskProcessReport r = WaitFor(**started, [](const TaskProcessReport& x) { return x.state == SideTaskState::kStopped; });
  ASSERT_EQ(r.state, SideTaskState::kStopped);
  EXPECT_NE(r.failure.find("injected failure at step 5"), std::string::npos) << r.failure;
}

TEST(TaskProcessTest, ExceedingTheMemoryLimitIsAnOutOfMemoryFailure) {
  TaskProcessOptions o = HostOptions();
  o.start_paused = false;
  o.memory_limit_bytes = int64_t{6} << 30;  // room for LibTorch's mappings, not for 16 GiB more
  Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Spec("cnn:alloc=16GiB,alloc_after=3"), o);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  TaskProcessReport r = WaitFor(**started, [](const TaskProcessReport& x) { return x.state == SideTaskState::kStopped; });
  ASSERT_EQ(r.state, SideTaskState::kStopped);
  EXPECT_NE(r.failure.find("out of memory: limit " + std::to_string(o.memory_limit_bytes) + " bytes"),
            std::string::npos)
      << r.failure;

  // Too large already in Setup: Start fails with the reason.
  Result<std::unique_ptr<TaskProcess>> huge = TaskProcess::Start(Spec("pagerank:scale=30"), o);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("out of memory"), std::string::npos) << huge.status().message();
  EXPECT_NE(huge.status().message().find("in Setup"), std::string::npos) << huge.status().message();
}

// LibTorch's CPU allocator throws a plain c10::Error when it fails; the
// host makes it a typed out-of-memory failure, not an exception's text.
TEST(TaskProcessTest, ALibTorchAllocationOverTheLimitIsAnOutOfMemoryFailure) {
  TaskProcessOptions o = HostOptions();
  o.memory_limit_bytes = int64_t{6} << 30;
  // The synthetic images alone are 2^24 x 128 x 128 floats (1 TiB), made in Setup by torch::randn.
  Result<std::unique_ptr<TaskProcess>> huge = TaskProcess::Start(Spec("cnn:samples=16777216,size=128"), o);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("out of memory: limit " + std::to_string(o.memory_limit_bytes) + " bytes"),
            std::string::npos)
      << huge.status().message();
  EXPECT_NE(huge.status().message().find("in Setup"), std::string::npos) << huge.status().message();
}

TEST(TaskProcessTest, LimitTooSmallForTheHostFailsStartWithAHint) {
  TaskProcessOptions o = HostOptions();
  o.memory_limit_bytes = int64_t{64} << 20;  // LibTorch alone maps more
  Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Spec("pagerank:scale=4"), o);
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.status().message().find("address space"), std::string::npos) << started.status().message();
}

TEST(TaskProcessTest, SetupFailureAndBadInputFailStart) {
  Result<std::unique_ptr<TaskProcess>> missing = TaskProcess::Start(Spec("pagerank:graph=/nonexistent/g.txt"), HostOptions());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/g.txt"), std::string::npos) << missing.status().message();

  SideTaskSpec bogus;
  bogus.name = "bogus";
  EXPECT_EQ(TaskProcess::Start(bogus, HostOptions()).status().code(), StatusCode::kInvalidArgument);

  TaskProcessOptions no_host = HostOptions();
  no_host.host_binary = "/nonexistent/pipewright";
  Result<std::unique_ptr<TaskProcess>> r = TaskProcess::Start(Spec("cnn"), no_host);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/pipewright"), std::string::npos);

  TaskProcessOptions bad_cpu = HostOptions();
  bad_cpu.cpu = 100000;
  EXPECT_EQ(TaskProcess::Start(Spec("cnn"), bad_cpu).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(TaskProcess::Start(Command(""), HostOptions()).status().code(), StatusCode::kInvalidArgument);
}

// The child's confinement (one code path for both kinds of task): checked on
// a host at normal priority and on a sleeping command at SCHED_IDLE — a
// SCHED_IDLE host could wait minutes to finish Setup on a busy test machine.
void ExpectConfined(pid_t pid, int cpu, int64_t limit_bytes) {
  cpu_set_t theirs;
  ASSERT_EQ(sched_getaffinity(pid, sizeof(theirs), &theirs), 0);
  EXPECT_EQ(CPU_COUNT(&theirs), 1);
  EXPECT_TRUE(CPU_ISSET(cpu, &theirs));
  rlimit limit{};
  ASSERT_EQ(prlimit(pid, RLIMIT_AS, nullptr, &limit), 0);
  EXPECT_EQ(limit.rlim_cur, static_cast<rlim_t>(limit_bytes));
  EXPECT_EQ(getpgid(pid), pid) << "own process group";
}

TEST(TaskProcessTest, IdlePriorityAffinityAndLimitAreApplied) {
  const int cpu = FirstAllowedCpu();
  TaskProcessOptions o = HostOptions();
  o.cpu = cpu;
  o.memory_limit_bytes = int64_t{5} << 30;
  Result<std::unique_ptr<TaskProcess>> host = TaskProcess::Start(Spec("pagerank:scale=4"), o);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  ExpectConfined((*host)->pid(), cpu, o.memory_limit_bytes);
  EXPECT_EQ(sched_getscheduler((*host)->pid()), SCHED_OTHER) << "idle_priority=false keeps the normal policy";

  TaskProcessOptions idle;
  idle.cpu = cpu;
  idle.memory_limit_bytes = int64_t{1} << 30;
  ASSERT_TRUE(idle.idle_priority) << "the default";
  Result<std::unique_ptr<TaskProcess>> command = TaskProcess::Start(Command("sleep 30"), idle);
  ASSERT_TRUE(command.ok()) << command.status().ToString();
  EXPECT_EQ(sched_getscheduler((*command)->pid()), SCHED_IDLE);
  ExpectConfined((*command)->pid(), cpu, idle.memory_limit_bytes);
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER) << "the rank keeps its own policy";
}

TEST(ImperativeTaskTest, PausedWithSigstopResumedWithSigcontStoppedByStop) {
  TaskProcessOptions o;  // SCHED_IDLE: sleep needs no CPU
  o.cpu = FirstAllowedCpu();
  Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Command("sleep 30"), o);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  TaskProcess& p = **started;
  const pid_t pid = p.pid();
  EXPECT_EQ(StateOf(pid), 'T') << "starts stopped";
  EXPECT_EQ(sched_getscheduler(pid), SCHED_IDLE);
  EXPECT_EQ(p.Poll().state, SideTaskState::kPaused);

  p.Resume(0);
  for (int i = 0; i < 5000 && StateOf(pid) == 'T'; ++i) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_NE(StateOf(pid), 'T');
  EXPECT_EQ(p.Poll().state, SideTaskState::kRunning);

  for (int round = 1; round <= 3; ++round) {
    p.Pause();
    TaskProcessReport r = WaitFor(p, [&](const TaskProcessReport& x) { return x.pauses == round; });
    ASSERT_EQ(r.pauses, round);
    EXPECT_EQ(StateOf(pid), 'T');
    EXPECT_GT(r.pause_latency_max_us, 0);
    p.Resume(0);
  }
  const TaskProcessReport r = p.Stop(/*grace_ms=*/2000);
  EXPECT_EQ(r.state, SideTaskState::kStopped);
  EXPECT_GT(r.run_seconds, 0);
  ExpectReaped(pid);
}

TEST(ImperativeTaskTest, NothingRunsBeforeTheFirstResume) {
  const std::string marker =
      (std::filesystem::temp_directory_path() / ("pw_imperative_" + std::to_string(getpid()))).string();
  std::remove(marker.c_str());
  Result<std::unique_ptr<TaskProcess>> started =
      TaskProcess::Start(Command("touch " + marker + " && sleep 30"), CommandOptions());
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_FALSE(std::filesystem::exists(marker));
  (*started)->Resume(0);
  for (int i = 0; i < 10000 && !std::filesystem::exists(marker); ++i) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_TRUE(std::filesystem::exists(marker));
  const pid_t pid = (*started)->pid();
  started->reset();  // the destructor stops it, the whole group included
  ExpectReaped(pid);
  std::remove(marker.c_str());
}

TEST(ImperativeTaskTest, ExitStatusBecomesFinishedOrFailure) {
  TaskProcessOptions o = CommandOptions();
  o.start_paused = false;
  Result<std::unique_ptr<TaskProcess>> ok = TaskProcess::Start(Command("true"), o);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(WaitFor(**ok, [](const TaskProcessReport& x) { return x.state == SideTaskState::kFinished; }).state,
            SideTaskState::kFinished);
  Result<std::unique_ptr<TaskProcess>> bad = TaskProcess::Start(Command("exit 3"), o);
  ASSERT_TRUE(bad.ok());
  TaskProcessReport r = WaitFor(**bad, [](const TaskProcessReport& x) { return x.state == SideTaskState::kStopped; });
  EXPECT_EQ(r.state, SideTaskState::kStopped);
  EXPECT_NE(r.failure.find("exited with status 3"), std::string::npos) << r.failure;
  Result<std::unique_ptr<TaskProcess>> killed = TaskProcess::Start(Command("kill -SEGV $$"), o);
  ASSERT_TRUE(killed.ok());
  r = WaitFor(**killed, [](const TaskProcessReport& x) { return x.state == SideTaskState::kStopped; });
  EXPECT_NE(r.failure.find("killed by signal " + std::to_string(SIGSEGV)), std::string::npos) << r.failure;
}

// Misbehaving tasks: each misbehaviour is contained and counted.

TEST(MisbehavingTaskTest, IgnoredPauseIsEnforcedWithSigstopAndContinuedOnResume) {
  TaskProcessOptions o = HostOptions();
  o.force_pause_after_ms = 30;
  Result<std::unique_ptr<TaskProcess>> started =
      TaskProcess::Start(Spec("image:width=32,height=32,spin_after=3"), o);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  TaskProcess& p = **started;
  const pid_t pid = p.pid();
  p.Resume(0);
  ASSERT_EQ(WaitFor(p, [](const TaskProcessReport& x) { return x.state == SideTaskState::kRunning; }).state,
            SideTaskState::kRunning);
  std::this_thread::sleep_for(milliseconds(50));  // inside the endless step 4 by now
  p.Pause();
  TaskProcessReport r = WaitFor(p, [](const TaskProcessReport& x) { return x.forced_pauses == 1; });
  ASSERT_EQ(r.forced_pauses, 1);
  EXPECT_EQ(r.pauses, 0) << "the step never acknowledged";
  // kill(2) returns once the signal is queued; the stop itself follows.
  for (int waited = 0; StateOf(pid) != 'T' && waited < 2000; waited += 2) std::this_thread::sleep_for(milliseconds(2));
  EXPECT_EQ(StateOf(pid), 'T');
  const double cpu = ReadProcessStat(pid).value_or(ProcessStat{}).cpu_seconds();
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(ReadProcessStat(pid).value_or(ProcessStat{}).cpu_seconds(), cpu) << "stopped: no CPU time";

  p.Resume(0);  // continued: it may spin again inside the bubble
  for (int waited = 0; StateOf(pid) == 'T' && waited < 5000; waited += 2) std::this_thread::sleep_for(milliseconds(2));
  EXPECT_NE(StateOf(pid), 'T');
  p.Pause();
  r = WaitFor(p, [](const TaskProcessReport& x) { return x.forced_pauses == 2; });
  EXPECT_EQ(r.forced_pauses, 2);
  EXPECT_EQ(r.stalled_pauses, 1) << "no step ended between the two: the step is stuck, not starved";
  r = p.Stop(/*grace_ms=*/100);
  EXPECT_EQ(r.state, SideTaskState::kStopped);
  ExpectReaped(pid);
}

TEST(MisbehavingTaskTest, FloodedOutputIsRateLimitedAndCounted) {
  TaskProcessOptions o = CommandOptions();
  o.start_paused = false;
  std::vector<std::string> lines;
  o.output_sink = [&](const std::string& line) { lines.push_back(line); };
  Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Command("exec yes flood"), o);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  const auto begin = std::chrono::steady_clock::now();
  TaskProcessReport r = WaitFor(**started, [](const TaskProcessReport& x) { return x.output_bytes > (4 << 20); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_GT(r.output_bytes, 4 << 20);
  const TaskOutputOptions limits;
  // The burst, the rate over the time taken, and one "held back" note per forwarded line at most.
  EXPECT_LE(static_cast<double>(lines.size()), 2 * (limits.burst_lines + limits.lines_per_second * seconds + 1));
  EXPECT_GT(r.output_lines_held_back, 1000);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front(), "flood");
  r = (*started)->Stop();
  EXPECT_EQ(r.state, SideTaskState::kStopped);
  EXPECT_EQ(r.failure, "");

  // A line without an end is cut, not kept whole in the rank's memory; the
  // last line still arrives when the task exits.
  lines.clear();
  Result<std::unique_ptr<TaskProcess>> long_line =
      TaskProcess::Start(Command("head -c 3000000 /dev/zero | tr '\\0' x; echo; echo done"), o);
  ASSERT_TRUE(long_line.ok()) << long_line.status().ToString();
  r = WaitFor(**long_line, [](const TaskProcessReport& x) { return x.state == SideTaskState::kFinished; });
  EXPECT_EQ(r.state, SideTaskState::kFinished);
  EXPECT_EQ(r.output_bytes, 3000000 + 6);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_LE(lines[0].size(), limits.max_line_bytes + 6) << "cut and marked";
  EXPECT_EQ(lines[1], "done");
}

TEST(MisbehavingTaskTest, ChildrenArePausedAndRemovedWithTheTask) {
  TaskProcessOptions o = CommandOptions();
  o.start_paused = false;
  Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Command("sleep 30 & sleep 30 & wait"), o);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  TaskProcess& p = **started;
  const pid_t pid = p.pid();
  auto wait_usage = [&](const std::function<bool(const ProcessGroupUsage&)>& done) {
    ProcessGroupUsage u = ReadProcessGroupUsage(pid);
    for (int waited = 0; !done(u) && waited < 10000; waited += 5) {
      std::this_thread::sleep_for(milliseconds(5));
      p.Poll();
      u = ReadProcessGroupUsage(pid);
    }
    return u;
  };
  EXPECT_EQ(wait_usage([](const ProcessGroupUsage& u) { return u.processes == 3; }).processes, 3);
  p.Pause();
  EXPECT_EQ(wait_usage([](const ProcessGroupUsage& u) { return u.stopped == 3; }).stopped, 3) << "children too";
  p.Resume(0);
  EXPECT_EQ(wait_usage([](const ProcessGroupUsage& u) { return u.stopped == 0; }).stopped, 0);
  p.Stop(/*grace_ms=*/200);
  EXPECT_EQ(wait_usage([](const ProcessGroupUsage& u) { return u.processes == 0; }).processes, 0)
      << "no child outlives the task";
}

TEST(ImperativeTaskTest, TheTaskIsToldItsMemoryBudget) {
  TaskProcessOptions o = CommandOptions();
  o.start_paused = false;
  o.memory_limit_bytes = int64_t{100} << 20;
  Result<std::unique_ptr<TaskProcess>> told =
      TaskProcess::Start(Command("test \"$PIPEWRIGHT_TASK_MEMORY_BYTES\" = 104857600"), o);
  ASSERT_TRUE(told.ok()) << told.status().ToString();
  TaskProcessReport r = WaitFor(**told, [](const TaskProcessReport& x) { return x.state != SideTaskState::kRunning; });
  EXPECT_EQ(r.state, SideTaskState::kFinished) << r.failure;
}

TEST(MisbehavingTaskTest, AChildNotYetExecutedIsNotChargedTheRanksMemory) {
  // Started paused, the child stops between fork and exec, still mapping
  // this process's pages (its resident size is ours); they are not its own.
  TaskProcessOptions o = CommandOptions();
  o.memory_limit_bytes = int64_t{16} << 20;
  o.group_check_interval_ms = 10;
  ASSERT_GT(ReadProcessStat(getpid()).value_or(ProcessStat{}).resident_bytes, o.memory_limit_bytes)
      << "the test needs a parent larger than the limit";
  Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Command("true"), o);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  TaskProcess& p = **started;
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
    ASSERT_NE(p.Poll().state, SideTaskState::kStopped) << p.Poll().failure;
  }
  p.Resume(0);
  TaskProcessReport r = WaitFor(p, [](const TaskProcessReport& x) { return x.state != SideTaskState::kRunning; });
  EXPECT_EQ(r.state, SideTaskState::kFinished) << r.failure;
}

TEST(MisbehavingTaskTest, GroupOverItsMemoryLimitIsKilledAndReported) {
  TaskProcessOptions o = CommandOptions();
  o.start_paused = false;
  o.memory_limit_bytes = int64_t{100} << 20;  // each dd fits under RLIMIT_AS; the two together do not
  o.group_check_interval_ms = 20;
  const std::string hog = "dd if=/dev/zero bs=80M count=1 2>/dev/null | sleep 30";
  Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Command(hog + " & " + hog + " & wait"), o);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  const pid_t pid = (*started)->pid();
  TaskProcessReport r = WaitFor(**started, [](const TaskProcessReport& x) { return x.state == SideTaskState::kStopped; });
  ASSERT_EQ(r.state, SideTaskState::kStopped);
  EXPECT_NE(r.failure.find("over its memory limit of 100 MiB"), std::string::npos) << r.failure;
  EXPECT_GT(r.private_max_bytes, o.memory_limit_bytes);
  EXPECT_GE(r.processes_max, 5) << "the shell, two dd, two sleep";
  for (int waited = 0; ReadProcessGroupUsage(pid).processes > 0 && waited < 5000; waited += 5) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(ReadProcessGroupUsage(pid).processes, 0);
}

}  // namespace
}  // namespace pw

namespace pw {
namespace {

// Prints pause latencies (Pause() -> task stopped) over many short bubbles;
// figures, not assertions (the machine is shared). Iterative tasks run at
// normal priority here (HostOptions), so the figures show the protocol and
// the step length rather than how busy the machine's other cores are.
// 30 rounds of 10 ms running, then a pause that must be acknowledged.
TaskProcessReport RunAndPause30Times(TaskProcess& p) {
  for (int i = 1; i <= 30; ++i) {
    p.Resume(0);
    std::this_thread::sleep_for(milliseconds(10));
    p.Pause();
    WaitFor(p, [&](const TaskProcessReport& x) { return x.pauses == i; });
  }
  const TaskProcessReport r = p.Poll();
  EXPECT_EQ(r.pauses, 30);
  return r;
}

TEST(PauseLatencyFigures, IterativeAndImperative) {
  for (const std::string& text : {std::string("cnn"), std::string("pagerank"), std::string("image")}) {
    Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Spec(text), HostOptions());
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    TaskProcess& p = **started;
    const TaskProcessReport r = RunAndPause30Times(p);
    std::printf("[figures] %-9s step %.2f ms, pause latency mean %.0f us, max %.0f us over %lld pauses\n",
                text.c_str(), r.step_us / 1e3, r.pause_latency_mean_us, r.pause_latency_max_us,
                static_cast<long long>(r.pauses));
  }
  // SCHED_IDLE delays when /proc shows the stop on a busy machine (the task
  // must be scheduled to act on SIGSTOP, though it runs no user code first).
  for (bool idle : {true, false}) {
    TaskProcessOptions o = CommandOptions();
    o.idle_priority = idle;
    Result<std::unique_ptr<TaskProcess>> started = TaskProcess::Start(Command("while :; do :; done"), o);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    TaskProcess& p = **started;
    const TaskProcessReport r = RunAndPause30Times(p);
    std::printf("[figures] imperative busy loop (%s): pause latency mean %.0f us, max %.0f us over %lld pauses\n",
                idle ? "SCHED_IDLE" : "SCHED_OTHER", r.pause_latency_mean_us, r.pause_latency_max_us,
                static_cast<long long>(r.pauses));
  }
}

}  // namespace
}  // namespace pw
