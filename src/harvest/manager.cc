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

struct HarvestManager::State {
  HarvestOptions options;
  HarvestRankReport report;
  std::vector<SideTaskSpec> assigned;
  Schedule compute, lowered;
  int pp_rank = 0;
  int cpu = -1;
  double memory_cap = 0;

  // Training thread only.
  BubbleEdgePredictor edges{0, 0};
  SideTaskSupervisor supervisor;
  std::vector<char> started;       // per task: its runner is published (sized in Create)
  std::vector<TaskOrder> orders;   // the supervisor's, reserved in Create
  Clock::time_point origin{};
  PairedStepLog paired;            // step ends in seconds since `origin`
  std::vector<RankObserver::LaneEvent> lanes;
  bool finished = false;

  // Filled by the background thread, read lock-free by the training thread.
  std::vector<std::atomic<SideTaskRunner*>> runners;
  std::atomic<int> ready{0};        // start attempts finished (ok or failed)
  std::atomic<bool> all_ready{false};

  // Shared with the background thread.
  std::mutex mu;
  std::condition_variable cv;
  bool go = false, stop = false, thread_done = false;
  std::vector<std::unique_ptr<SideTaskRunner>> owned;   // index = assigned task
  std::vector<TaskProcessReport> latest;
  std::vector<double> cpu_seconds;
  std::vector<TaskProcessReport> at_start;  // progress when Start returned
  std::vector<double> setup_cpu;            // CPU seconds when Start returned
  std::vector<std::string> start_failures;
  std::vector<int64_t> limits;
  std::thread thread;

  void Run();
  // Which runners the background thread has published so far.
  void SeeStarted() {
    for (size_t i = 0; i < runners.size(); ++i) {
      started[i] = runners[i].load(std::memory_order_acquire) != nullptr ? 1 : 0;
    }
  }
  // Carries out the supervisor's orders (a published runner stays).
  void Obey() {
    for (const TaskOrder& o : orders) {
      SideTaskRunner* r = runners[o.task].load(std::memory_order_acquire);
      if (o.kind == TaskOrder::Kind::kResume) r->Resume(o.budget_us); else r->Pause();
    }
  }
};

void HarvestManager::State::Run() {
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return go || stop; });
    if (stop) {
      thread_done = true;
      cv.notify_all();
      return;
    }
  }
  const size_t n = assigned.size();
  for (size_t i = 0; i < n; ++i) {
    TaskProcessOptions o;
    o.host_binary = options.host_binary;
    o.cpu = cpu;
    o.memory_limit_bytes = limits[i];
    o.idle_priority = true;
    o.start_paused = options.policy == HarvestPolicy::kGated;
    o.step_margin = options.step_margin;
    Result<std::unique_ptr<SideTaskRunner>> started = options.starter(assigned[i], o);
    std::lock_guard<std::mutex> lock(mu);
    if (!started.ok()) {
      start_failures[i] = started.status().ToString();
    } else {
      owned[i] = std::move(*started);
      at_start[i] = owned[i]->Poll();
      setup_cpu[i] = std::max(0.0, CpuSeconds(owned[i]->pid()));
      runners[i].store(owned[i].get(), std::memory_order_release);
    }
    ready.fetch_add(1);
    cv.notify_all();
    if (stop) break;
  }
  all_ready.store(true, std::memory_order_release);
  std::unique_lock<std::mutex> lock(mu);
  while (!stop) {
    for (size_t i = 0; i < n; ++i) {
      if (owned[i] == nullptr) continue;
      latest[i] = owned[i]->Poll();
      const double cpu_s = CpuSeconds(owned[i]->pid());
      if (cpu_s > 0) cpu_seconds[i] = cpu_s;
    }
    cv.wait_for(lock, std::chrono::milliseconds(options.poll_interval_ms), [&] { return stop; });
  }
  // Stop the tasks from this thread, before it exits: they were started
  // here, and PR_SET_PDEATHSIG kills them when their starting thread ends
  // (task_process.h), which would SIGKILL them before a gentle Stop.
  lock.unlock();
  for (size_t i = 0; i < n; ++i) {
    if (owned[i] == nullptr) continue;
    const double cpu_s = CpuSeconds(owned[i]->pid());
    TaskProcessReport final_report = owned[i]->Stop(options.stop_grace_ms);
    lock.lock();
    cpu_seconds[i] = std::max(cpu_seconds[i], cpu_s);
    latest[i] = std::move(final_report);
    lock.unlock();
  }
  lock.lock();
  thread_done = true;
  cv.notify_all();
}

Result<std::unique_ptr<HarvestManager>> HarvestManager::Create(const RankContext& context,
                                                               HarvestOptions options) {
  if (context.compute == nullptr || context.lowered == nullptr || context.job == nullptr) {
    return Status::InvalidArgument("harvest manager: the rank context has no schedule");
  }
  if (!options.starter) options.starter = TaskProcessStarter();
  auto state = std::make_shared<State>();
  state->compute = *context.compute;
  state->lowered = *context.lowered;
  state->edges = BubbleEdgePredictor(context.lowered->programs[context.pp_rank].size(), options.min_resume_us);
  state->lanes.reserve(std::min<size_t>(options.max_lane_events, 4096));
  state->pp_rank = context.pp_rank;
  const int pp = context.lowered->num_ranks();
  state->memory_cap = options.memory_cap_bytes > 0 ? options.memory_cap_bytes
                                                  : DefaultRankMemoryCap(context.world_size);
  // Placement over world ranks: a world rank has its pipeline rank's bubbles.
  std::vector<std::vector<double>> idle_pp;
  std::vector<double> free_pp;
  PW_RETURN_IF_ERROR(EstimateRanks(context, state->memory_cap, idle_pp, free_pp));
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
      if (placed[i] == context.world_rank) state->assigned.push_back(options.tasks[i]);
    }
  }
  const size_t n = state->assigned.size();
  const double share = free_bytes[context.world_rank] / std::max<size_t>(1, n);
  state->limits.assign(n, std::max<int64_t>(options.memory_floor_bytes, static_cast<int64_t>(share)));
  for (size_t i = 0; i < n; ++i) {  // the user's @mem= wins: they know the task
    if (state->assigned[i].memory_limit_bytes > 0) state->limits[i] = state->assigned[i].memory_limit_bytes;
  }
  state->runners = std::vector<std::atomic<SideTaskRunner*>>(n);
  for (auto& r : state->runners) r.store(nullptr);
  state->owned.resize(n);
  state->latest.resize(n);
  state->cpu_seconds.assign(n, 0);
  state->at_start.resize(n);
  state->setup_cpu.assign(n, 0);
  state->start_failures.resize(n);
  state->started.assign(n, 0);
  state->orders.reserve(n);
  state->origin = Clock::now();
  const PairedBlockSchedule blocks(options.paired_block_steps, options.paired_seed);
  state->paired = PairedStepLog(blocks, context.job->steps);
  state->supervisor = SideTaskSupervisor(options.policy, blocks, n);
  if (options.pin_cores) {
    const std::vector<int> cpus = AllowedCpus();
    if (!cpus.empty()) {
      state->cpu = cpus[context.local_rank % cpus.size()];
      // Best effort: an unpinned rank still trains; its tasks stay on the core.
      (void)PinProcessToCpu(state->cpu);
    }
  }
  HarvestRankReport& report = state->report;
  report.world_rank = context.world_rank;
  report.pp_rank = context.pp_rank;
  report.core = state->cpu;
  report.policy = options.policy;
  report.free_memory_bytes = free_bytes[context.world_rank];
  state->options = std::move(options);
  // Tasks set up from now on, at idle priority on the rank's core (so only
  // in its bubbles); they run only once the predictor exists (gated) or at
  // once (idle).
  state->go = true;
  if (n > 0) state->thread = std::thread([s = state] { s->Run(); });
  std::unique_ptr<HarvestManager> manager(new HarvestManager());
  manager->state_ = std::move(state);
  return manager;
}

HarvestManager::~HarvestManager() {
  if (state_ != nullptr && !state_->finished) Finish();
}

void HarvestManager::OnIdle(const IdleEdge& edge) {
  State& s = *state_;
  if (!s.edges.OnIdle(edge, Clock::now())) return;  // edges alternate; be robust anyway
  s.SeeStarted();
  s.supervisor.OnIdle(edge.step, s.started, s.all_ready.load(std::memory_order_acquire), s.edges.BudgetUs(edge),
                      s.orders);
  s.Obey();
  s.report.ready_step = s.supervisor.ready_step();
  if (s.supervisor.counted_from_step() >= 0) s.paired.MarkFrom(s.supervisor.counted_from_step());
  ++s.report.idle_edges;
  if (s.supervisor.resumed()) ++s.report.resumes;
}

void HarvestManager::OnBusy() {
  State& s = *state_;
  const Clock::time_point now = Clock::now();
  const Clock::time_point idle_since = s.edges.idle_since();
  const int edge_key = s.edges.open_edge();
  const std::optional<double> idle_seconds = s.edges.OnBusy(now);
  if (!idle_seconds) return;
  // The end of the step (RunStep returns; the last such edge of the step
  // wins), recorded when the paired measurement runs: the next block starts.
  const bool step_ended =
      edge_key < 0 && s.paired.RecordStepEnd(s.supervisor.step(), std::chrono::duration<double>(now - s.origin).count());
  s.SeeStarted();
  s.supervisor.OnBusy(step_ended, s.started, s.orders);
  s.Obey();
  if (s.supervisor.resumed() && s.lanes.size() < s.options.max_lane_events) {
    s.lanes.push_back({"side tasks", idle_since, now});
  }
  const double seconds = *idle_seconds;
  s.report.bubble_seconds += seconds;
  if (s.report.ready_step >= 0) s.report.bubble_seconds_ready += seconds;
  if (s.report.ready_step >= 0 && !s.supervisor.held()) s.report.bubble_seconds_allowed += seconds;
}

void HarvestManager::OnCostsMeasured(const CostModel& costs) {
  State& s = *state_;
  s.supervisor.OnCostsMeasured();
  Result<BubblePredictor> p = BubblePredictor::Create(s.compute, s.lowered, s.pp_rank, costs, s.memory_cap);
  if (p.ok()) {
    s.report.predicted_idle_per_step_ms = p->IdlePerStepUs() / 1000.0;
    s.report.predicted_step_ms = p->MakespanUs() / 1000.0;
    s.edges.SetSimulated(std::move(*p));
  } else {
    s.report.failures.push_back("bubble prediction: " + p.status().ToString());
  }
  if (s.options.wait_for_setup_ms > 0 && s.thread.joinable()) {
    std::unique_lock<std::mutex> lock(s.mu);
    s.cv.wait_for(lock, std::chrono::milliseconds(s.options.wait_for_setup_ms), [&] {
      return s.ready.load() >= static_cast<int>(s.assigned.size()) || s.thread_done;
    });
  }
}

std::string HarvestManager::Finish() {
  State& s = *state_;
  if (s.finished) return s.report.ToJson();
  s.finished = true;
  if (s.edges.idle()) OnBusy();
  if (s.thread.joinable()) {
    std::unique_lock<std::mutex> lock(s.mu);
    s.stop = true;
    s.cv.notify_all();
    // A task still in Setup must not hold training up: wait a while, then
    // leave the thread behind (it owns a reference to the state).
    const auto grace = std::chrono::milliseconds(
        s.options.stop_grace_ms * static_cast<int64_t>(s.assigned.size() + 1) + 3000);
    const bool done = s.cv.wait_for(lock, grace, [&] { return s.thread_done; });
    lock.unlock();
    if (done) {
      s.thread.join();
    } else {
      s.thread.detach();
      s.report.failures.push_back("side tasks were still starting when training ended");
    }
  }
  HarvestRankReport& report = s.report;
  std::lock_guard<std::mutex> lock(s.mu);
  double latency_sum = 0;
  for (size_t i = 0; i < s.assigned.size(); ++i) {
    HarvestTaskReport t;
    t.name = s.assigned[i].name == "cmd" ? "cmd: " + s.assigned[i].command : s.assigned[i].name;
    t.memory_limit_bytes = s.limits[i];
    t.start_failure = s.start_failures[i];
    if (s.owned[i] == nullptr && t.start_failure.empty()) {
      t.start_failure = "not started: training ended before it could start";
    }
    t.process = s.latest[i];  // the final report when the thread stopped the task
    t.cpu_seconds = s.cpu_seconds[i];
    t.setup_cpu_seconds = s.setup_cpu[i];
    t.cpu_seconds = std::max(0.0, t.cpu_seconds - s.setup_cpu[i]);
    t.process.steps = std::max<int64_t>(0, t.process.steps - s.at_start[i].steps);
    t.process.partial_steps = std::max<int64_t>(0, t.process.partial_steps - s.at_start[i].partial_steps);
    t.process.work = std::max(0.0, t.process.work - s.at_start[i].work);
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
  report.paired = s.paired.Slowdown();
  report.paired_from_step = s.paired.from_step();
  report.pause_latency_mean_us = report.pauses > 0 ? latency_sum / static_cast<double>(report.pauses) : 0;
  return report.ToJson();
}

std::vector<RankObserver::LaneEvent> HarvestManager::LaneEvents() const {
  std::vector<LaneEvent> out = state_->lanes;
  std::string names;
  for (const SideTaskSpec& spec : state_->assigned) names += (names.empty() ? "" : "+") + spec.name;
  for (LaneEvent& e : out) e.name = names + " RUNNING";
  return out;
}

const std::vector<SideTaskSpec>& HarvestManager::assigned() const { return state_->assigned; }
const HarvestRankReport& HarvestManager::report() const { return state_->report; }
int HarvestManager::start_attempts() const { return state_->ready.load(); }

}  // namespace pw
