// HarvestManager with a test double behind SideTaskRunner (what the manager
// asks of a task: Resume / Pause / Poll / Stop), placement, and the summary.
// The end-to-end test with real side-task processes is harvest_dist_test.cc.
#include "harvest/manager.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "harvest/bubble_predictor.h"
#include "schedule/lowering.h"
#include "schedule/schedule_test_util.h"

namespace pw {
namespace {

// Records calls; counts a pause per Pause() and a step per Resume().
struct FakeLog {
  std::mutex mu;
  std::vector<std::string> calls;
  std::vector<double> budgets;
  std::vector<TaskProcessOptions> options;
  int stops = 0;
};

class FakeRunner : public SideTaskRunner {
 public:
  explicit FakeRunner(std::shared_ptr<FakeLog> log) : log_(std::move(log)) {}
  void Resume(double budget_us) override {
    std::lock_guard<std::mutex> lock(log_->mu);
    log_->calls.push_back("resume");
    log_->budgets.push_back(budget_us);
    ++report_.steps;
    report_.work += 10;
  }
  void Pause() override {
    std::lock_guard<std::mutex> lock(log_->mu);
    log_->calls.push_back("pause");
    ++report_.pauses;
    report_.pause_latency_mean_us = 100;
    report_.pause_latency_max_us = 250;
  }
  TaskProcessReport Poll() override {
    std::lock_guard<std::mutex> lock(log_->mu);
    return report_;
  }
  TaskProcessReport Stop(int) override {
    std::lock_guard<std::mutex> lock(log_->mu);
    ++log_->stops;
    report_.state = SideTaskState::kFinished;
    report_.unit = "things";
    return report_;
  }
  pid_t pid() const override { return -1; }

 private:
  std::shared_ptr<FakeLog> log_;
  TaskProcessReport report_;
};

struct Job {
  Schedule compute, lowered;
  TrainJob config;
  RankContext Context(int rank) const {
    RankContext c;
    c.world_rank = c.pp_rank = rank;
    c.world_size = 2;
    c.local_rank = rank;
    c.job = &config;
    c.compute = &compute;
    c.lowered = &lowered;
    c.estimated_costs.stages.assign(2, StageCost{});
    for (StageCost& stage : c.estimated_costs.stages) {
      stage.forward = 1;
      stage.backward = 2;
      stage.activation_bytes = 1e6;
    }
    c.estimated_costs.static_bytes = {1e7, 1e7};
    return c;
  }
};

Job TwoRankJob() {
  Job j;
  j.compute = testing_util::HandOneFOneB(2, 3);
  j.lowered = *InsertCommunication(*AddGradientSync(j.compute));
  return j;
}

CostModel Costs() {  // F = 1 ms, B = 2 ms: rank 1 waits 1 ms at RECV_F0, 2 ms at the tail
  CostModel c;
  c.stages = {StageCost{}};
  c.stages[0].forward = 1;
  c.stages[0].backward = 2;
  return c;
}

int IndexOf(const Schedule& s, int rank, const std::string& name) {
  for (size_t i = 0; i < s.programs[rank].size(); ++i) {
    if (s.ActionName(s.programs[rank][i]) == name) return static_cast<int>(i);
  }
  return -1;
}

HarvestOptions FakeOptions(HarvestPolicy policy, std::shared_ptr<FakeLog> log, int tasks = 1) {
  HarvestOptions o;
  o.policy = policy;
  o.pin_cores = false;
  o.memory_cap_bytes = 8e9;
  o.poll_interval_ms = 1;
  o.min_resume_us = 500;
  for (int i = 0; i < tasks; ++i) {
    SideTaskSpec spec;
    spec.name = "fake" + std::to_string(i);
    spec.pinned_rank = 1;
    o.tasks.push_back(spec);
  }
  o.starter = [log](const SideTaskSpec&, const TaskProcessOptions& options)
      -> Result<std::unique_ptr<SideTaskRunner>> {
    {
      std::lock_guard<std::mutex> lock(log->mu);
      log->options.push_back(options);
    }
    return std::unique_ptr<SideTaskRunner>(new FakeRunner(log));
  };
  return o;
}

// Waits (bounded) until the background thread has tried to start every task.
void WaitAttempts(const HarvestManager& m, int n) {
  for (int i = 0; i < 10000 && m.start_attempts() < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(m.start_attempts(), n);
}

// Drives edges until the background thread has started the tasks (bounded).
void WaitStarted(HarvestManager& m, const std::shared_ptr<FakeLog>& log, int edge_index) {
  for (int i = 0; i < 5000; ++i) {
    m.OnIdle({IdleReason::kRecvWait, 1, edge_index});
    m.OnBusy();
    std::lock_guard<std::mutex> lock(log->mu);
    if (!log->calls.empty()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

TEST(HarvestManagerTest, GatedResumesWithPredictionAndPausesOnBusy) {
  Job job = TwoRankJob();
  auto log = std::make_shared<FakeLog>();
  Result<std::unique_ptr<HarvestManager>> m =
      HarvestManager::Create(job.Context(1), FakeOptions(HarvestPolicy::kGated, log));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ((*m)->assigned().size(), 1u);
  const int recv_f0 = IndexOf(job.lowered, 1, "1RECV_F0");
  const int recv_f1 = IndexOf(job.lowered, 1, "1RECV_F1");  // predicted 0: no resume
  const int first_opt = IndexOf(job.lowered, 1, "1OPT");
  ASSERT_GE(recv_f0, 0);
  ASSERT_GE(recv_f1, 0);
  ASSERT_GE(first_opt, 0);

  // Before the costs are measured the task is set up but never resumed.
  WaitAttempts(**m, 1);
  (*m)->OnIdle({IdleReason::kRecvWait, 0, recv_f0});
  (*m)->OnBusy();
  {
    std::lock_guard<std::mutex> lock(log->mu);
    EXPECT_TRUE(log->calls.empty());
  }
  (*m)->OnCostsMeasured(Costs());
  WaitStarted(**m, log, recv_f0);
  {
    std::lock_guard<std::mutex> lock(log->mu);
    ASSERT_EQ(log->options.size(), 1u);
    EXPECT_TRUE(log->options[0].start_paused);
    EXPECT_TRUE(log->options[0].idle_priority);
    EXPECT_GE(log->options[0].memory_limit_bytes, int64_t{2} << 30);  // the floor
    log->calls.clear();
    log->budgets.clear();
  }
  (*m)->OnIdle({IdleReason::kRecvWait, 2, recv_f0});
  (*m)->OnBusy();
  (*m)->OnIdle({IdleReason::kRecvWait, 2, recv_f1});  // predicted 0 < min_resume_us
  (*m)->OnBusy();
  // The tail: waiting at the first OPT for rank 0's gradient norm; the
  // between-steps edge after it is predicted 0.
  (*m)->OnIdle({IdleReason::kNormWait, 2, first_opt});
  (*m)->OnBusy();
  (*m)->OnIdle({IdleReason::kBetweenSteps, 2, -1});
  (*m)->OnBusy();
  {
    std::lock_guard<std::mutex> lock(log->mu);
    EXPECT_EQ(log->calls, (std::vector<std::string>{"resume", "pause", "resume", "pause"}));
    EXPECT_EQ(log->budgets, (std::vector<double>{1000, 2000}));  // the predictor's µs
  }
  const std::string json = (*m)->Finish();
  nlohmann::json j = nlohmann::json::parse(json);
  EXPECT_EQ(j["policy"], "gated");
  EXPECT_GT(j["bubble_seconds"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(j["predicted_idle_per_step_ms"].get<double>(), 3.0);
  EXPECT_EQ(j["tasks"].size(), 1u);
  EXPECT_EQ(j["tasks"][0]["state"], "FINISHED");
  EXPECT_GE(j["pauses"].get<int64_t>(), 2);
  EXPECT_DOUBLE_EQ(j["pause_latency_max_us"].get<double>(), 250);
  EXPECT_TRUE(j["failures"].empty());
  EXPECT_EQ(log->stops, 1);
  // One lane interval per resumed idle period.
  EXPECT_GE((*m)->LaneEvents().size(), 2u);
}

// Once an edge has been seen kObservedEdges times, its own measured idle
// lengths replace the simulator's prediction (which is 1000 µs for recv_f0).
TEST(HarvestManagerTest, GatedLearnsEachEdgesObservedLength) {
  Job job = TwoRankJob();
  auto log = std::make_shared<FakeLog>();
  Result<std::unique_ptr<HarvestManager>> m =
      HarvestManager::Create(job.Context(1), FakeOptions(HarvestPolicy::kGated, log));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const int recv_f0 = IndexOf(job.lowered, 1, "1RECV_F0");
  ASSERT_GE(recv_f0, 0);
  WaitAttempts(**m, 1);
  (*m)->OnCostsMeasured(Costs());
  for (int step = 0; step <= kObservedEdges; ++step) {
    (*m)->OnIdle({IdleReason::kRecvWait, step, recv_f0});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a 20 ms bubble
    (*m)->OnBusy();
  }
  (*m)->Finish();  // before locking the log: stopping the fake task writes to it
  std::lock_guard<std::mutex> lock(log->mu);
  ASSERT_EQ(log->budgets.size(), static_cast<size_t>(kObservedEdges) + 1);
  for (int i = 0; i < kObservedEdges; ++i) EXPECT_EQ(log->budgets[i], 1000);  // simulator
  EXPECT_GT(log->budgets.back(), 10000);  // the edge's history: about 20 ms
}

TEST(HarvestManagerTest, IdlePolicyNeverGatesAndNoneStartsNothing) {
  Job job = TwoRankJob();
  auto log = std::make_shared<FakeLog>();
  auto m = HarvestManager::Create(job.Context(1), FakeOptions(HarvestPolicy::kIdle, log));
  ASSERT_TRUE(m.ok());
  (*m)->OnCostsMeasured(Costs());
  WaitAttempts(**m, 1);
  for (int i = 0; i < 20; ++i) {
    (*m)->OnIdle({IdleReason::kBetweenSteps, i, -1});
    (*m)->OnBusy();
  }
  nlohmann::json j = nlohmann::json::parse((*m)->Finish());
  std::lock_guard<std::mutex> lock(log->mu);
  ASSERT_EQ(log->options.size(), 1u);
  EXPECT_FALSE(log->options[0].start_paused);
  EXPECT_TRUE(log->calls.empty());  // the OS schedules it, not the manager
  EXPECT_EQ(j["idle_edges"].get<int>(), 20);

  auto log2 = std::make_shared<FakeLog>();
  auto none = HarvestManager::Create(job.Context(1), FakeOptions(HarvestPolicy::kNone, log2));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE((*none)->assigned().empty());
  (*none)->OnCostsMeasured(Costs());
  (*none)->OnIdle({IdleReason::kBetweenSteps, 0, -1});
  (*none)->OnBusy();
  nlohmann::json jn = nlohmann::json::parse((*none)->Finish());
  EXPECT_EQ(jn["policy"], "none");
  EXPECT_TRUE(jn["tasks"].empty());
  EXPECT_TRUE(log2->options.empty());
}

// --harvest-paired: gated tasks resume only in allowed blocks; idle-policy
// tasks are paused for held blocks; the report carries the paired figure.
TEST(HarvestManagerTest, PairedBlocksHoldTheTasksAndReportTheSlowdown) {
  for (HarvestPolicy policy : {HarvestPolicy::kGated, HarvestPolicy::kIdle}) {
    Job job = TwoRankJob();
    job.config.steps = 40;
    auto log = std::make_shared<FakeLog>();
    HarvestOptions o = FakeOptions(policy, log);
    o.paired_block_steps = 2;
    o.paired_seed = 5;
    auto m = HarvestManager::Create(job.Context(1), o);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    const int recv_f0 = IndexOf(job.lowered, 1, "1RECV_F0");
    WaitAttempts(**m, 1);
    (*m)->OnCostsMeasured(Costs());
    std::vector<std::string> calls_per_step;
    for (int step = 0; step < 40; ++step) {
      {
        std::lock_guard<std::mutex> lock(log->mu);
        log->calls.clear();
      }
      (*m)->OnIdle({IdleReason::kRecvWait, step, recv_f0});
      (*m)->OnBusy();
      (*m)->OnIdle({IdleReason::kBetweenSteps, step, -1});
      // Allowed steps are 2 ms longer than held ones.
      const bool held = PairedPhaseOf(step, 2, 5) == PairedPhase::kHeld;
      std::this_thread::sleep_for(std::chrono::milliseconds(held ? 4 : 6));
      (*m)->OnBusy();
      std::lock_guard<std::mutex> lock(log->mu);
      std::string calls;
      for (const std::string& c : log->calls) calls += c + " ";
      if (step < 2) continue;  // the first steps: before the manager has seen the task ready
      if (policy == HarvestPolicy::kGated) {
        // Resumed twice (RECV_F0 and the tail) in an allowed step, never in a held one.
        EXPECT_EQ(calls, held ? "" : "resume pause resume pause ") << "step " << step;
      } else {
        // Paused as a held block starts, resumed as an allowed one starts.
        const bool next_held = PairedPhaseOf(step + 1, 2, 5) == PairedPhase::kHeld;
        EXPECT_EQ(calls, held == next_held ? "" : next_held ? "pause " : "resume ") << "step " << step;
      }
    }
    nlohmann::json j = nlohmann::json::parse((*m)->Finish());
    ASSERT_TRUE(j.contains("paired")) << j.dump();
    const nlohmann::json& p = j["paired"];
    EXPECT_EQ(p["block_steps"], 2);
    EXPECT_GE(p["pairs"].get<int64_t>(), 8);
    EXPECT_LE(p["first_step"].get<int64_t>(), 4);
    EXPECT_GT(p["slowdown"].get<double>(), 0.1);  // about 2 / 4 ms, less the edges' overhead
    EXPECT_LE(p["ci95_low"].get<double>(), p["slowdown"].get<double>());
    EXPECT_GE(p["ci95_high"].get<double>(), p["slowdown"].get<double>());
    EXPECT_LT(j["bubble_seconds_allowed"].get<double>(), j["bubble_seconds_ready"].get<double>());
    const std::string summary = FormatHarvestSummary({j.dump()}, {}, 3);
    EXPECT_NE(summary.find("in-run slowdown on rank 1: +"), std::string::npos) << summary;
    EXPECT_NE(summary.find("95% CI"), std::string::npos) << summary;
    // The training time side tasks could share leaves out the profiled steps.
    const std::string timed = FormatHarvestSummary({j.dump()}, {1.0, 1.0, 1.0, 0.25, 0.5}, 3);
    EXPECT_NE(timed.find("during 0.75 s of training steps after the 3 profiled"), std::string::npos) << timed;
  }
}

TEST(HarvestManagerTest, AFailingStartIsReportedNotFatal) {
  Job job = TwoRankJob();
  HarvestOptions o = FakeOptions(HarvestPolicy::kGated, std::make_shared<FakeLog>());
  o.starter = [](const SideTaskSpec& spec, const TaskProcessOptions&) -> Result<std::unique_ptr<SideTaskRunner>> {
    return Status::FailedPrecondition(spec.name + ": setup failed (test)");
  };
  auto m = HarvestManager::Create(job.Context(1), o);
  ASSERT_TRUE(m.ok());
  (*m)->OnCostsMeasured(Costs());
  WaitAttempts(**m, 1);
  (*m)->OnIdle({IdleReason::kBetweenSteps, 3, -1});
  (*m)->OnBusy();
  nlohmann::json j = nlohmann::json::parse((*m)->Finish());
  ASSERT_EQ(j["failures"].size(), 1u);
  EXPECT_NE(j["failures"][0].get<std::string>().find("setup failed (test)"), std::string::npos);
  EXPECT_NE(FormatHarvestSummary({j.dump()}, {}, 3).find("side task failed"), std::string::npos);
}

TEST(HarvestManagerTest, ContainedMisbehaviourIsReportedInTheSummary) {
  HarvestRankReport report;
  report.world_rank = 1;
  HarvestTaskReport task;
  task.name = "cmd";
  task.process.forced_pauses = 4;
  task.process.stalled_pauses = 3;
  task.process.output_bytes = 3 << 20;
  task.process.output_lines_held_back = 1234;
  report.tasks = {task};
  HarvestTaskReport calm = task;
  calm.name = "cnn";
  calm.process = TaskProcessReport{};
  calm.process.forced_pauses = 2;  // starved at a pause, but its steps end: not misbehaviour
  report.tasks.push_back(calm);
  const std::string summary = FormatHarvestSummary({report.ToJson()}, {}, 3);
  EXPECT_NE(summary.find("harvest rank 1 side task cmd misbehaved: its step ran through 3 pauses without ending (each enforced "
                         "with SIGSTOP); "
                         "3 MiB of output (1234 lines held back by the rate limit)"),
            std::string::npos)
      << summary;
  EXPECT_EQ(summary.find("side task cnn misbehaved"), std::string::npos) << summary;
}

TEST(HarvestManagerTest, TasksNotStartedBeforeTheEndAreReported) {
  Job job = TwoRankJob();
  // A setup that outlasts training is left behind and reported, never waited for.
  auto slow_log = std::make_shared<FakeLog>();
  HarvestOptions o = FakeOptions(HarvestPolicy::kGated, slow_log);
  o.stop_grace_ms = 10;
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto entered = std::make_shared<std::atomic<bool>>(false);
  o.starter = [release, entered](const SideTaskSpec& spec,
                                 const TaskProcessOptions&) -> Result<std::unique_ptr<SideTaskRunner>> {
    entered->store(true);
    for (int i = 0; i < 20000 && !release->load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return Status::FailedPrecondition(spec.name + ": slow setup");
  };
  auto m = HarvestManager::Create(job.Context(1), o);
  ASSERT_TRUE(m.ok());
  for (int i = 0; i < 10000 && !entered->load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(entered->load());
  nlohmann::json j = nlohmann::json::parse((*m)->Finish());
  release->store(true);
  ASSERT_EQ(j["failures"].size(), 2u) << j["failures"].dump();
  EXPECT_NE(j["failures"][0].get<std::string>().find("still starting"), std::string::npos);
  EXPECT_NE(j["failures"][1].get<std::string>().find("not started"), std::string::npos);
}

TEST(HarvestManagerTest, PlacementPinsThenFollowsBubblesAndMemory) {
  auto spec = [](const std::string& name, int rank) {
    SideTaskSpec s;
    s.name = name;
    s.pinned_rank = rank;
    return s;
  };
  const int64_t floor = 100;
  // Rank 1 has twice rank 0's bubbles: it takes "a"; for "b" the shares tie
  // (1000 vs 2000 / 2) and the lower rank wins; "c" goes to rank 1 again.
  Result<std::vector<int>> p = PlaceSideTasks({spec("a", -1), spec("b", -1), spec("c", -1)},
                                              {{1000}, {2000}}, {1e9, 1e9}, floor, 1.2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (std::vector<int>{1, 0, 1}));
  // A pin counts first (rank 1's share halves: a tie, the lower rank wins);
  // memory below the floor excludes a rank.
  p = PlaceSideTasks({spec("a", -1), spec("b", 1)}, {{1000}, {2000}}, {1e9, 1e9}, floor, 1.2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (std::vector<int>{0, 1}));
  p = PlaceSideTasks({spec("a", -1), spec("b", 1)}, {{1000}, {2500}}, {1e9, 1e9}, floor, 1.2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (std::vector<int>{1, 1}));
  p = PlaceSideTasks({spec("a", -1)}, {{1000}, {2000}}, {1e9, 50}, floor, 1.2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (std::vector<int>{0}));
  Result<std::vector<int>> bad = PlaceSideTasks({spec("a", 5)}, {{1}, {1}}, {1e9, 1e9}, floor, 1.2);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("rank 5"), std::string::npos);
}

// A task that gives its step goes where its steps fit: rank 1 has more idle
// time (4 x 3.5 ms) but at the runtime's margin (1.2) a 3 ms step needs
// 3.6 ms; rank 0's two 4 ms periods hold one each. Without a step, the idle
// total decides; counting every step that fits (margin 1) rank 1 wins too.
TEST(HarvestManagerTest, PlacementFollowsWhereTheTasksStepsFit) {
  Result<SideTaskSpec> long_steps = ParseSideTaskSpec("cnn:batch=256@step=3ms");
  ASSERT_TRUE(long_steps.ok()) << long_steps.status().ToString();
  EXPECT_DOUBLE_EQ(long_steps->step_ms, 3.0);
  Result<SideTaskSpec> any = ParseSideTaskSpec("pagerank");
  ASSERT_TRUE(any.ok());
  const std::vector<std::vector<double>> periods = {{4000, 4000}, {3500, 3500, 3500, 3500}};
  Result<std::vector<int>> p = PlaceSideTasks({*long_steps}, periods, {1e9, 1e9}, 100, 1.2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (std::vector<int>{0}));
  p = PlaceSideTasks({*any}, periods, {1e9, 1e9}, 100, 1.2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (std::vector<int>{1}));
  p = PlaceSideTasks({*long_steps}, periods, {1e9, 1e9}, 100, 1.0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (std::vector<int>{1}));
  for (const char* bad : {"cnn@step=0", "cnn@step=fast", "cnn@step=-2ms", "cnn@step="}) {
    Result<SideTaskSpec> s = ParseSideTaskSpec(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.status().message().find("@step=MS"), std::string::npos) << s.status().message();
  }
}

}  // namespace
}  // namespace pw
