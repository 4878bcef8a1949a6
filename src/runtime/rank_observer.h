// Rank observers: the hook bubble harvesting (harvest/) plugs into a
// training rank. runtime/ does not depend on harvest/: the CLI hands the
// session harvest's manager as a TrainObserverHooks. One observer per rank
// sees the executor's idle edges (IdleListener), the costs measured in the
// first steps, and the end of training, and returns a report that world
// rank 0 gathers and prints.
//
// Thread-safety: an observer is called on its rank's executor thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "job/train_job.h"
#include "runtime/idle_listener.h"
#include "runtime/timeline.h"
#include "schedule/schedule.h"
#include "sim/cost_model.h"

namespace pw {

// What an observer may know about its rank. Pointers are valid only during
// the factory call (copy what you keep).
struct RankContext {
  int world_rank = 0, world_size = 1, local_rank = 0;
  int pp_rank = 0, dp_rank = 0;
  const TrainJob* job = nullptr;     // the job's settings
  const Schedule* compute = nullptr;  // the compute-only schedule (F, B, I, W)
  const Schedule* lowered = nullptr;  // what the executor runs (with RECV, SEND, OPT)
  // Costs estimated before anything is measured (search/model_costs.h:
  // relative forward FLOPs per stage, B = 2F, I = W = F; activation bytes
  // per microbatch and stage; static bytes per pipeline rank). Not resolved.
  CostModel estimated_costs;
};

class RankObserver : public IdleListener {
 public:
  // After the first TrainObserverHooks::profile_steps steps, on every rank:
  // the measured mean per-(stage, kind) compute costs in milliseconds of the
  // whole pipeline (runtime/profile.h; the first step is left out), with
  // each stage's activation bytes filled from RankContext. On the executor's
  // thread, between steps.
  virtual void OnCostsMeasured(const CostModel& costs) = 0;
  // After the last step (or when training fails): stop whatever the
  // observer runs, and return this rank's report as one JSON object.
  virtual std::string Finish() = 0;
  // After Finish: intervals to draw in this rank's own lane of the trace
  // ("side tasks" under each rank), steady_clock times.
  struct LaneEvent {
    std::string name;
    Timeline::Clock::time_point start, end;
  };
  virtual std::vector<LaneEvent> LaneEvents() const { return {}; }
};

struct TrainObserverHooks {
  // Called once per rank after rendezvous; null: no observer. An error
  // fails the rank (bad --side-task settings).
  std::function<Result<std::unique_ptr<RankObserver>>(const RankContext&)> make;
  // World rank 0, after training: every world rank's Finish() report
  // (index = world rank) and the run's step times in seconds (index = step
  // - first step); returns text to print after the summary line.
  std::function<std::string(const std::vector<std::string>& reports,
                            const std::vector<double>& step_seconds)>
      summarize;
  int profile_steps = 3;  // steps timed before OnCostsMeasured (>= 2)
};

}  // namespace pw
