#include "harvest/manager.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "harvest/bubble_edge_predictor.h"
#include "harvest/bubble_predictor.h"
#include "harvest/paired_steps.h"
#include "os/cpu.h"
#include "os/memory.h"
#include "os/process_stats.h"
#include "sim/simulator.h"
#include "sim/step_fit.h"

namespace pw {
namespace {

using Clock = std::chrono::steady_clock;

class ProcessRunner : public SideTaskRunner {
 public:
  explicit ProcessRunner(std::unique_ptr<TaskProcess> p) : p_(std::move(p)) {}
  void Resume(double budget_us) override { p_->Resume(budget_us); }
  void Pause() override { p_->Pause(); }
  TaskProcessReport Poll() override { return p_->Poll(); }
  TaskProcessReport Stop(int grace_ms) override { return p_->Stop(grace_ms); }
  pid_t pid() const override { return p_->pid(); }

 private:
  std::unique_ptr<TaskProcess> p_;
};

// user + system CPU seconds of `pid` and its waited-for children; 0 if gone.
double CpuSeconds(pid_t pid) {
  const std::optional<ProcessStat> stat = ReadProcessStat(pid);
  return stat ? stat->cpu_seconds() : 0;
}

// Simulated idle per step and least free memory of every pipeline rank,
// from the context's estimated costs (relative FLOPs: only the ratios matter).
Status EstimateRanks(const RankContext& c, double cap, std::vector<std::vector<double>>& idle,
                     std::vector<double>& free_bytes) {
  CostModel costs = c.estimated_costs;
  costs.memory_cap = cap;
  const int ranks = c.compute->num_ranks();
  idle.assign(ranks, {});
  free_bytes.assign(ranks, cap);
  for (int r = 0; r < ranks; ++r) {
    PW_ASSIGN_OR_RETURN(BubblePredictor p, BubblePredictor::Create(*c.compute, *c.lowered, r, costs, cap));
    idle[r] = p.IdlePeriodsUs();
    if (p.min_free_memory_bytes()) free_bytes[r] = *p.min_free_memory_bytes();
  }
  return Status::Ok();
}

// The idle time per step a task can use: every period, or with a known step
// only the whole steps that fit each period as the gated policy starts them.
double UsableIdleUs(const std::vector<double>& periods_us, double step_ms, double margin) {
  const double step_us = step_ms * 1000.0;
  double usable = 0;
  for (double p : periods_us) usable += step_us > 0 ? StepsThatFit(p, step_us, margin) * step_us : p;
  return usable;
}

}  // namespace

SideTaskStarter TaskProcessStarter() {
  return [](const SideTaskSpec& spec, const TaskProcessOptions& options)
             -> Result<std::unique_ptr<SideTaskRunner>> {
    PW_ASSIGN_OR_RETURN(std::unique_ptr<TaskProcess> p, TaskProcess::Start(spec, options));
    return std::unique_ptr<SideTaskRunner>(new ProcessRunner(std::move(p)));
  };
}

double DefaultRankMemoryCap(int ranks_on_host) {
  const Result<MemoryInfo> memory = ReadMemoryInfo();
  const double total = memory.ok() ? static_cast<double>(memory->total_bytes) : 0;
  return total / std::max(1, ranks_on_host);
}

Result<std::vector<int>> PlaceSideTasks(const std::vector<SideTaskSpec>& specs,
                                        const std::vector<std::vector<double>>& idle_periods_us,
                                        const std::vector<double>& free_bytes, int64_t floor_bytes,
                                        double step_margin) {
  const int ranks = static_cast<int>(idle_periods_us.size());
  std::vector<int> placed(specs.size(), -1), load(ranks, 0);
  for (size_t i = 0; i < specs.size(); ++i) {
    const int r = specs[i].pinned_rank;
    if (r < 0) continue;
    if (r >= ranks) {
      return Status::InvalidArgument("side task '" + specs[i].name + "' is pinned to rank " +
                                     std::to_string(r) + " but the job has ranks 0.." +
                                     std::to_string(ranks - 1) + "; change @rank=");
    }
    placed[i] = r;
    ++load[r];
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (placed[i] >= 0) continue;
    int best = -1, roomiest = 0;
    double best_share = 0;
    for (int r = 0; r < ranks; ++r) {
      if (free_bytes[r] > free_bytes[roomiest]) roomiest = r;
      if (free_bytes[r] / (load[r] + 1) < static_cast<double>(floor_bytes)) continue;
      const double share = UsableIdleUs(idle_periods_us[r], specs[i].step_ms, step_margin) / (1 + load[r]);
      if (best < 0 || share > best_share) {
        best = r;
        best_share = share;
      }
    }
    placed[i] = best >= 0 ? best : roomiest;
    ++load[placed[i]];
  }
  return placed;
}

// Each group has one owner; a field is touched only by its group's owner,
// or under the lock its comment names.
struct HarvestManager::State {
  // Set by Create before the background thread starts, then only read (by
  // both threads).
  struct Fixed {
    HarvestOptions options;
    std::vector<SideTaskSpec> assigned;
    std::vector<int64_t> limits;   // memory limit per assigned task
    Schedule compute, lowered;
    int pp_rank = 0;
    int cpu = -1;
    double memory_cap = 0;
  } fixed;

  // The training thread's (the RankObserver calls, Finish, LaneEvents): no
  // lock; the background thread never touches them.
  struct Training {
    HarvestRankReport report;
    BubbleEdgePredictor edges{0, 0};
    SideTaskSupervisor supervisor;
    std::vector<char> started;       // per task: its runner is published (sized in Create)
    std::vector<TaskOrder> orders;   // the supervisor's, reserved in Create
    Clock::time_point origin{};
    PairedStepLog paired;            // step ends in seconds since `origin`
    std::vector<RankObserver::LaneEvent> lanes;
    bool finished = false;
    std::thread thread;              // the background thread: started in Create, ended in Finish
  } train;

  // The background thread's: it starts and polls the tasks. runners, ready
  // and all_ready it publishes lock-free (release; the training thread
  // acquires); the rest it shares with the training thread under mu.
  struct Tasks {
    std::vector<std::atomic<SideTaskRunner*>> runners;
    std::atomic<int> ready{0};        // start attempts finished (ok or failed)
    std::atomic<bool> all_ready{false};
    std::mutex mu;
    std::condition_variable cv;
    bool go = false, stop = false, thread_done = false;
    std::vector<std::unique_ptr<SideTaskRunner>> owned;   // index = assigned task
    std::vector<TaskProcessReport> latest;
    std::vector<double> cpu_seconds;
    std::vector<TaskProcessReport> at_start;  // progress when Start returned
    std::vector<double> setup_cpu;            // CPU seconds when Start returned
    std::vector<std::string> start_failures;
  } tasks;

  void Run();
  // Which runners the background thread has published so far.
  void SeeStarted() {
    for (size_t i = 0; i < tasks.runners.size(); ++i) {
      train.started[i] = tasks.runners[i].load(std::memory_order_acquire) != nullptr ? 1 : 0;
    }
  }
  // Carries out the supervisor's orders (a published runner stays).
  void Obey() {
    for (const TaskOrder& o : train.orders) {
      SideTaskRunner* r = tasks.runners[o.task].load(std::memory_order_acquire);
      if (o.kind == TaskOrder::Kind::kResume) r->Resume(o.budget_us); else r->Pause();
    }
  }
};

void HarvestManager::State::Run() {
  {
    std::unique_lock<std::mutex> lock(tasks.mu);
    tasks.cv.wait(lock, [&] { return tasks.go || tasks.stop; });
    if (tasks.stop) {
      tasks.thread_done = true;
      tasks.cv.notify_all();
      return;
    }
  }
  const size_t n = fixed.assigned.size();
  for (size_t i = 0; i < n; ++i) {
    TaskProcessOptions o;
    o.host_binary = fixed.options.host_binary;
    o.cpu = fixed.cpu;
    o.memory_limit_bytes = fixed.limits[i];
    o.idle_priority = true;
    o.start_paused = fixed.options.policy == HarvestPolicy::kGated;
    o.step_margin = fixed.options.step_margin;
    Result<std::unique_ptr<SideTaskRunner>> started = fixed.options.starter(fixed.assigned[i], o);
    std::lock_guard<std::mutex> lock(tasks.mu);
    if (!started.ok()) {
      tasks.start_failures[i] = started.status().ToString();
    } else {
      tasks.owned[i] = std::move(*started);
      tasks.at_start[i] = tasks.owned[i]->Poll();
      tasks.setup_cpu[i] = std::max(0.0, CpuSeconds(tasks.owned[i]->pid()));
      tasks.runners[i].store(tasks.owned[i].get(), std::memory_order_release);
    }
    tasks.ready.fetch_add(1);
    tasks.cv.notify_all();
    if (tasks.stop) break;
  }
  tasks.all_ready.store(true, std::memory_order_release);
  std::unique_lock<std::mutex> lock(tasks.mu);
  while (!tasks.stop) {
    for (size_t i = 0; i < n; ++i) {
      if (tasks.owned[i] == nullptr) continue;
      tasks.latest[i] = tasks.owned[i]->Poll();
      const double cpu_s = CpuSeconds(tasks.owned[i]->pid());
      if (cpu_s > 0) tasks.cpu_seconds[i] = cpu_s;
    }
    tasks.cv.wait_for(lock, std::chrono::milliseconds(fixed.options.poll_interval_ms), [&] { return tasks.stop; });
  }
  // Stop the tasks from this thread, before it exits: they were started
  // here, and PR_SET_PDEATHSIG kills them when their starting thread ends
  // (task_process.h), which would SIGKILL them before a gentle Stop.
  lock.unlock();
  for (size_t i = 0; i < n; ++i) {
    if (tasks.owned[i] == nullptr) continue;
    const double cpu_s = CpuSeconds(tasks.owned[i]->pid());
    TaskProcessReport final_report = tasks.owned[i]->Stop(fixed.options.stop_grace_ms);
    lock.lock();
    tasks.cpu_seconds[i] = std::max(tasks.cpu_seconds[i], cpu_s);
    tasks.latest[i] = std::move(final_report);
    lock.unlock();
  }
  lock.lock();
  tasks.thread_done = true;
  tasks.cv.notify_all();
}

namespace {

using State = HarvestManager::State;

// Places every side task over the job's world ranks (a world rank has its
// pipeline rank's bubbles) and keeps this rank's, each with its memory
// limit: an equal share of the rank's free memory (at least the floor),
// or the user's @mem=. Returns the rank's free memory.
Result<double> AssignTasks(const RankContext& context, const HarvestOptions& options, State& s) {
  const int pp = context.lowered->num_ranks();
  std::vector<std::vector<double>> idle_pp;
  std::vector<double> free_pp;
  PW_RETURN_IF_ERROR(EstimateRanks(context, s.fixed.memory_cap, idle_pp, free_pp));
  std::vector<std::vector<double>> idle(context.world_size);
  std::vector<double> free_bytes(context.world_size);
  for (int w = 0; w < context.world_size; ++w) {
    idle[w] = idle_pp[w % pp];  // world rank = dp_rank * pp + pp_rank
    free_bytes[w] = free_pp[w % pp];
  }
  PW_ASSIGN_OR_RETURN(std::vector<int> placed,
                      PlaceSideTasks(options.tasks, idle, free_bytes, options.memory_floor_bytes, options.step_margin));
  if (options.policy != HarvestPolicy::kNone) {
    for (size_t i = 0; i < placed.size(); ++i) {
      if (placed[i] == context.world_rank) s.fixed.assigned.push_back(options.tasks[i]);
    }
  }
  const size_t n = s.fixed.assigned.size();
  const double share = free_bytes[context.world_rank] / std::max<size_t>(1, n);
  s.fixed.limits.assign(n, std::max<int64_t>(options.memory_floor_bytes, static_cast<int64_t>(share)));
  for (size_t i = 0; i < n; ++i) {  // the user's @mem= wins: they know the task
    const int64_t own = s.fixed.assigned[i].memory_limit_bytes;
    if (own > 0) s.fixed.limits[i] = own;
  }
  return free_bytes[context.world_rank];
}

// One entry per assigned task in every per-task table.
void SizeTaskTables(State& s, size_t n) {
  s.tasks.runners = std::vector<std::atomic<SideTaskRunner*>>(n);
  for (auto& r : s.tasks.runners) r.store(nullptr);
  s.tasks.owned.resize(n);
  s.tasks.latest.resize(n);
  s.tasks.cpu_seconds.assign(n, 0);
  s.tasks.at_start.resize(n);
  s.tasks.setup_cpu.assign(n, 0);
  s.tasks.start_failures.resize(n);
  s.train.started.assign(n, 0);
  s.train.orders.reserve(n);
}

// Pins the rank to one allowed core (local rank's turn). Best effort: an
// unpinned rank still trains; its tasks stay on the core.
void PinRank(const RankContext& context, State& s) {
  const std::vector<int> cpus = AllowedCpus();
  if (cpus.empty()) return;
  s.fixed.cpu = cpus[context.local_rank % cpus.size()];
  (void)PinProcessToCpu(s.fixed.cpu);
}

}  // namespace

Result<std::unique_ptr<HarvestManager>> HarvestManager::Create(const RankContext& context,
                                                               HarvestOptions options) {
  if (context.compute == nullptr || context.lowered == nullptr || context.job == nullptr) {
    return Status::InvalidArgument("harvest manager: the rank context has no schedule");
  }
  if (!options.starter) options.starter = TaskProcessStarter();
  auto state = std::make_shared<State>();
  state->fixed.compute = *context.compute;
  state->fixed.lowered = *context.lowered;
  state->train.edges = BubbleEdgePredictor(context.lowered->programs[context.pp_rank].size(), options.min_resume_us);
  state->train.lanes.reserve(std::min<size_t>(options.max_lane_events, 4096));
  state->fixed.pp_rank = context.pp_rank;
  state->fixed.memory_cap = options.memory_cap_bytes > 0 ? options.memory_cap_bytes
                                                         : DefaultRankMemoryCap(context.world_size);
  PW_ASSIGN_OR_RETURN(const double free_here, AssignTasks(context, options, *state));
  const size_t n = state->fixed.assigned.size();
  SizeTaskTables(*state, n);
  state->train.origin = Clock::now();
  const PairedBlockSchedule blocks(options.paired_block_steps, options.paired_seed);
  state->train.paired = PairedStepLog(blocks, context.job->steps);
  state->train.supervisor = SideTaskSupervisor(options.policy, blocks, n);
  if (options.pin_cores) PinRank(context, *state);
  HarvestRankReport& report = state->train.report;
  report.world_rank = context.world_rank;
  report.pp_rank = context.pp_rank;
  report.core = state->fixed.cpu;
  report.policy = options.policy;
  report.free_memory_bytes = free_here;
  state->fixed.options = std::move(options);
  // Tasks set up from now on, at idle priority on the rank's core (so only
  // in its bubbles); they run only once the predictor exists (gated) or at
  // once (idle).
  state->tasks.go = true;
  if (n > 0) state->train.thread = std::thread([s = state] { s->Run(); });
  std::unique_ptr<HarvestManager> manager(new HarvestManager());
  manager->state_ = std::move(state);
  return manager;
}

HarvestManager::~HarvestManager() {
  if (state_ != nullptr && !state_->train.finished) Finish();
}

void HarvestManager::OnIdle(const IdleEdge& edge) {
  State& s = *state_;
  State::Training& t = s.train;
  if (!t.edges.OnIdle(edge, Clock::now())) return;  // edges alternate; be robust anyway
  s.SeeStarted();
  t.supervisor.OnIdle(edge.step, t.started, s.tasks.all_ready.load(std::memory_order_acquire), t.edges.BudgetUs(edge),
                      t.orders);
  s.Obey();
  t.report.ready_step = t.supervisor.ready_step();
  if (t.supervisor.counted_from_step() >= 0) t.paired.MarkFrom(t.supervisor.counted_from_step());
  ++t.report.idle_edges;
  if (t.supervisor.resumed()) ++t.report.resumes;
}

void HarvestManager::OnBusy() {
  State& s = *state_;
  State::Training& t = s.train;
  const Clock::time_point now = Clock::now();
  const Clock::time_point idle_since = t.edges.idle_since();
  const int edge_key = t.edges.open_edge();
  const std::optional<double> idle_seconds = t.edges.OnBusy(now);
  if (!idle_seconds) return;
  // The end of the step (RunStep returns; the last such edge of the step
  // wins), recorded when the paired measurement runs: the next block starts.
  const double since_origin_s = std::chrono::duration<double>(now - t.origin).count();
  const bool step_ended = edge_key < 0 && t.paired.RecordStepEnd(t.supervisor.step(), since_origin_s);
  s.SeeStarted();
  t.supervisor.OnBusy(step_ended, t.started, t.orders);
  s.Obey();
  if (t.supervisor.resumed() && t.lanes.size() < s.fixed.options.max_lane_events) {
    t.lanes.push_back({"side tasks", idle_since, now});
  }
  const double seconds = *idle_seconds;
  t.report.bubble_seconds += seconds;
  if (t.report.ready_step >= 0) t.report.bubble_seconds_ready += seconds;
  if (t.report.ready_step >= 0 && !t.supervisor.held()) t.report.bubble_seconds_allowed += seconds;
}

void HarvestManager::OnCostsMeasured(const CostModel& costs) {
  State& s = *state_;
  State::Training& t = s.train;
  t.supervisor.OnCostsMeasured();
  const State::Fixed& f = s.fixed;
  Result<BubblePredictor> p = BubblePredictor::Create(f.compute, f.lowered, f.pp_rank, costs, f.memory_cap);
  if (p.ok()) {
    t.report.predicted_idle_per_step_ms = p->IdlePerStepUs() / 1000.0;
    t.report.predicted_step_ms = p->MakespanUs() / 1000.0;
    t.edges.SetSimulated(std::move(*p));
  } else {
    t.report.failures.push_back("bubble prediction: " + p.status().ToString());
  }
  if (s.fixed.options.wait_for_setup_ms > 0 && t.thread.joinable()) {
    std::unique_lock<std::mutex> lock(s.tasks.mu);
    s.tasks.cv.wait_for(lock, std::chrono::milliseconds(s.fixed.options.wait_for_setup_ms), [&] {
      return s.tasks.ready.load() >= static_cast<int>(s.fixed.assigned.size()) || s.tasks.thread_done;
    });
  }
}

std::string HarvestManager::Finish() {
  State& s = *state_;
  State::Training& train = s.train;
  if (train.finished) return train.report.ToJson();
  train.finished = true;
  if (train.edges.idle()) OnBusy();
  if (train.thread.joinable()) {
    std::unique_lock<std::mutex> lock(s.tasks.mu);
    s.tasks.stop = true;
    s.tasks.cv.notify_all();
    // A task still in Setup must not hold training up: wait a while, then
    // leave the thread behind (it owns a reference to the state).
    const auto grace = std::chrono::milliseconds(
        s.fixed.options.stop_grace_ms * static_cast<int64_t>(s.fixed.assigned.size() + 1) + 3000);
    const bool done = s.tasks.cv.wait_for(lock, grace, [&] { return s.tasks.thread_done; });
    lock.unlock();
    if (done) {
      train.thread.join();
    } else {
      train.thread.detach();
      train.report.failures.push_back("side tasks were still starting when training ended");
    }
  }
  HarvestRankReport& report = train.report;
  std::lock_guard<std::mutex> lock(s.tasks.mu);
  double latency_sum = 0;
  for (size_t i = 0; i < s.fixed.assigned.size(); ++i) {
    HarvestTaskReport t;
    const SideTaskSpec& spec = s.fixed.assigned[i];
    t.name = IsCommandTask(spec) ? "cmd: " + spec.command : spec.name;
    t.memory_limit_bytes = s.fixed.limits[i];
    t.start_failure = s.tasks.start_failures[i];
    if (s.tasks.owned[i] == nullptr && t.start_failure.empty()) {
      t.start_failure = "not started: training ended before it could start";
    }
    t.process = s.tasks.latest[i];  // the final report when the thread stopped the task
    t.cpu_seconds = s.tasks.cpu_seconds[i];
    t.setup_cpu_seconds = s.tasks.setup_cpu[i];
    t.cpu_seconds = std::max(0.0, t.cpu_seconds - s.tasks.setup_cpu[i]);
    t.process.steps = std::max<int64_t>(0, t.process.steps - s.tasks.at_start[i].steps);
    t.process.partial_steps = std::max<int64_t>(0, t.process.partial_steps - s.tasks.at_start[i].partial_steps);
    t.process.work = std::max(0.0, t.process.work - s.tasks.at_start[i].work);
    const TaskProcessReport& p = t.process;
    report.steps += p.steps;
    report.pauses += p.pauses;
    report.side_task_seconds += p.run_seconds;
    report.side_task_cpu_seconds += t.cpu_seconds;
    latency_sum += p.pause_latency_mean_us * static_cast<double>(p.pauses);
    report.pause_latency_max_us = std::max(report.pause_latency_max_us, p.pause_latency_max_us);
    if (!t.start_failure.empty()) report.failures.push_back(t.name + ": " + t.start_failure);
    if (!p.failure.empty()) report.failures.push_back(t.name + ": " + p.failure);
    report.tasks.push_back(std::move(t));
  }
  report.paired = train.paired.Slowdown();
  report.paired_from_step = train.paired.from_step();
  report.pause_latency_mean_us = report.pauses > 0 ? latency_sum / static_cast<double>(report.pauses) : 0;
  return report.ToJson();
}

std::vector<RankObserver::LaneEvent> HarvestManager::LaneEvents() const {
  std::vector<LaneEvent> out = state_->train.lanes;
  std::string names;
  for (const SideTaskSpec& spec : state_->fixed.assigned) names += (names.empty() ? "" : "+") + spec.name;
  for (LaneEvent& e : out) e.name = names + " RUNNING";
  return out;
}

const std::vector<SideTaskSpec>& HarvestManager::assigned() const { return state_->fixed.assigned; }
const HarvestRankReport& HarvestManager::report() const { return state_->train.report; }
int HarvestManager::start_attempts() const { return state_->tasks.ready.load(); }

}  // namespace pw
