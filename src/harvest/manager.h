// HarvestManager: bubble harvesting on one training rank. It is the rank's
// RankObserver (runtime/rank_observer.h): the executor's idle edges reach it on
// the training thread, and it starts, pauses and resumes the side tasks
// placed on the rank, each a TaskProcess (harvest/task_process.h) — its own
// process at SCHED_IDLE on the rank's core with an RLIMIT_AS.
//
// Policies (HarvestPolicy):
//   none   no side task runs; bubbles are still measured (the baseline)
//   idle   tasks start unpaused at idle priority; the OS runs them whenever
//          the core is free (no gating)
//   gated  tasks start paused; OnIdle resumes them with the predicted length
//          of the idle period, OnBusy pauses them; a short period does not
//          resume, and before costs are measured nothing runs.
// The decisions are pure objects the manager feeds and obeys:
// BubbleEdgePredictor (harvest/bubble_edge_predictor.h) predicts each
// bubble's length, SideTaskSupervisor (harvest/supervisor.h) orders resumes
// and pauses, PairedBlockSchedule and PairedStepLog (harvest/paired_steps.h)
// hold the paired blocks and the step times.
//
// Phases:
//   Create           places the job's tasks, pins every thread of the rank to
//                    its core (when pin_cores) and starts the rank's tasks
//                    from a background thread (their setup runs at idle
//                    priority on the rank's core, so only in its bubbles),
//                    which then polls their reports every poll_interval_ms;
//   OnIdle / OnBusy  each edge: the supervisor's orders, the bubble's time;
//   OnCostsMeasured  after the first training steps: builds the predictor;
//                    gated tasks run only from then on;
//   Finish           stops the tasks and returns the rank's report.
//
// Placement (PlaceSideTasks): a spec pinned with @rank=N goes to world rank
// N; the others, in order, to the rank with the most predicted bubble time
// per step that the task can use divided by (1 + tasks already there) —
// all of it, or for a task that gives its step (@step=MS) only what its
// steps fit: StepsThatFit (sim/step_fit.h) at step_margin per idle period, so a rank of
// many short bubbles loses to one of fewer long ones — among ranks whose free
// memory in their bubbles still leaves memory_floor_bytes per task (else the
// rank with the most free memory). Every rank computes the same placement
// from the same estimates (RankContext), so no communication is needed.
//
// Memory limit per task: the rank's least free memory over its bubbles
// (cap - static bytes - live activations, as the simulator predicts them)
// divided among its tasks, never below memory_floor_bytes (2 GiB by
// default): RLIMIT_AS counts address space, and a process that maps
// LibTorch and its threads' stacks reserves over 1 GiB before it allocates
// anything. The cap is memory_cap_bytes, by default the host's MemTotal
// divided by the ranks on the host. A spec's own limit (@mem=SIZE) replaces
// all of this for that task.
//
// Paired measurement (paired_block_steps = K > 0, harvest/paired_steps.h): the
// steps alternate between blocks of K where the tasks are allowed and
// blocks where they are held (gated: not resumed; idle: paused for the
// block), the order within each pair of blocks drawn from paired_seed, the
// same on every rank. Each rank times its steps (from one end of step to
// the next) and reports the mean relative difference allowed vs held over
// the complete pairs from the first step at which its tasks were ready and
// the costs measured, with a 95 % interval. A rank without tasks reports
// the same figure too: there it measures its own noise floor (the pipeline
// is one clock, so it also sees a slowdown caused on another rank).
//
// Failure: a side task that fails to start, crashes, or exceeds its limit is
// reported (failures in the report) and never fails training; OnIdle /
// OnBusy never block and never fail.
//
// Thread-safety: OnIdle/OnBusy/OnCostsMeasured/Finish on the training
// thread; the background thread only starts and polls tasks.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/paired_blocks.h"
#include "harvest/bubble_edge_predictor.h"
#include "harvest/side_task.h"
#include "harvest/supervisor.h"
#include "harvest/task_process.h"
#include "runtime/rank_observer.h"

namespace pw {

// What the manager needs of a running side task: TaskProcess, or a test double.
class SideTaskRunner {
 public:
  virtual ~SideTaskRunner() = default;
  virtual void Resume(double budget_us) = 0;  // non-blocking
  virtual void Pause() = 0;                   // non-blocking
  virtual TaskProcessReport Poll() = 0;
  virtual TaskProcessReport Stop(int grace_ms) = 0;
  virtual pid_t pid() const = 0;
};
using SideTaskStarter = std::function<Result<std::unique_ptr<SideTaskRunner>>(
    const SideTaskSpec& spec, const TaskProcessOptions& options)>;
// TaskProcess::Start behind SideTaskRunner.
SideTaskStarter TaskProcessStarter();

struct HarvestOptions {
  HarvestPolicy policy = HarvestPolicy::kGated;
  std::vector<SideTaskSpec> tasks;   // every task of the job; placed by PlaceSideTasks
  std::string host_binary = "/proc/self/exe";
  bool pin_cores = true;             // the rank and its tasks on core local_rank % cores
  double min_resume_us = 300;        // gated: shorter predicted idle periods do not resume
  double step_margin = 1.2;          // TaskProcessOptions::step_margin
  int64_t memory_floor_bytes = int64_t{2} << 30;
  double memory_cap_bytes = 0;       // per rank; 0: DefaultRankMemoryCap(world_size)
  int poll_interval_ms = 20;
  int stop_grace_ms = 2000;
  // > 0: OnCostsMeasured waits up to this long for the rank's tasks to
  // finish their setup (training pauses once; the tasks then harvest from
  // the next step). 0: never wait; a task harvests once its setup is done.
  int wait_for_setup_ms = 0;
  size_t max_lane_events = 100000;   // RUNNING intervals kept for the trace
  int paired_block_steps = 0;        // > 0: alternate allowed / held blocks of this many steps
  uint64_t paired_seed = 0;          // the order within each pair (the job's --seed)
  SideTaskStarter starter;           // null: TaskProcessStarter()
};

// MemTotal of this host divided by `ranks_on_host` (>= 1).
double DefaultRankMemoryCap(int ranks_on_host);

// Rank per spec (index = spec). `idle_periods_us[r]`: world rank r's predicted
// idle periods of one step (BubblePredictor::IdlePeriodsUs); `free_bytes[r]`:
// its least free memory in bubbles.
// InvalidArgument for a pinned rank outside [0, ranks).
Result<std::vector<int>> PlaceSideTasks(const std::vector<SideTaskSpec>& specs,
                                        const std::vector<std::vector<double>>& idle_periods_us,
                                        const std::vector<double>& free_bytes, int64_t floor_bytes,
                                        double step_margin);

struct HarvestTaskReport {
  std::string name;
  TaskProcessReport process;
  // The task process's user + system CPU time, and (process.steps, .work)
  // its progress, after it was started: Setup and the host's calibration
  // steps ran before training could gate it and are reported apart.
  double cpu_seconds = 0;
  double setup_cpu_seconds = 0;
  int64_t memory_limit_bytes = 0;
  std::string start_failure;   // set when it never started
};

struct HarvestRankReport {
  int world_rank = 0, pp_rank = 0, core = -1;
  HarvestPolicy policy = HarvestPolicy::kGated;
  double bubble_seconds = 0;         // measured idle (OnIdle -> OnBusy), whole run
  double bubble_seconds_ready = 0;   // ... while every task of the rank was running
  double bubble_seconds_allowed = 0; // ... and in a step where tasks were allowed (paired)
  int64_t idle_edges = 0;
  int64_t resumes = 0;               // gated: edges that resumed the tasks
  int64_t ready_step = -1;           // first step started with every task ready
  double predicted_idle_per_step_ms = 0, predicted_step_ms = 0;
  std::optional<double> free_memory_bytes;
  std::vector<HarvestTaskReport> tasks;
  // Sums over tasks.
  int64_t steps = 0, pauses = 0;
  double side_task_seconds = 0, side_task_cpu_seconds = 0;
  double pause_latency_mean_us = 0, pause_latency_max_us = 0;
  std::vector<std::string> failures;
  // With paired_block_steps > 0: the in-run slowdown; from_step is the
  // first step with the tasks ready and the costs measured (-1: never).
  std::optional<PairedSlowdown> paired;
  int64_t paired_from_step = -1;
  std::string ToJson() const;
};

class HarvestManager : public RankObserver {
 public:
  // Places the job's tasks and keeps this rank's. InvalidArgument for bad
  // options (a pinned rank outside the job).
  static Result<std::unique_ptr<HarvestManager>> Create(const RankContext& context,
                                                        HarvestOptions options);
  ~HarvestManager() override;  // Finish()es if needed

  void OnIdle(const IdleEdge& edge) override;
  void OnBusy() override;
  void OnCostsMeasured(const CostModel& costs) override;
  std::string Finish() override;
  std::vector<LaneEvent> LaneEvents() const override;

  // The specs placed on this rank, and after Finish the report.
  const std::vector<SideTaskSpec>& assigned() const;
  const HarvestRankReport& report() const;
  // How many of the rank's tasks have finished starting (or failed to);
  // any thread.
  int start_attempts() const;

  struct State;  // shared with the background thread

 private:
  HarvestManager() = default;
  std::shared_ptr<State> state_;
};

// The text the run's summary prints for the gathered per-rank reports (JSON
// from HarvestRankReport::ToJson) and the run's step times (seconds): per
// rank bubbles, side-task time, steps/work, pauses and latency, failures;
// then what the bubbles bought (side-task CPU seconds in the hosting ranks'
// bubble seconds, during the steps after the first `profile_steps`, which
// side tasks never share); with --harvest-paired, the in-run paired slowdown and its
// interval of the ranks that host tasks (else of rank 0: the noise floor).
// The separate-run slowdown needs a second run (--harvest-policy none);
// bench/harvest_bench.sh prints both.
std::string FormatHarvestSummary(const std::vector<std::string>& reports,
                                 const std::vector<double>& step_seconds, int profile_steps);

}  // namespace pw
