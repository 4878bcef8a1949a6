// ResolvedTrainPlan: what the planner (runtime/trainer.h PlanTraining)
// decided for a TrainJob, kept apart from what the user asked for. A job
// may ask for `--schedule auto`, `--layers-per-stage auto`, or a schedule
// file that sets the number of ranks and microbatches; the plan holds the
// concrete answer and why. The user's TrainJob is never rewritten: the
// settings the ranks run with are made explicitly, ApplyPlan(request, plan),
// and the checkpoint manifest records the request and the plan side by side.
//
// Thread-safety: plain values; the functions are pure.
#pragma once

#include <string>

#include "core/fields.h"
#include "job/train_job.h"

namespace pw {

struct ResolvedTrainPlan {
  std::string schedule;          // a built-in family or a schedule file; never "auto"
  int pp = 0;                    // pipeline ranks
  int microbatches = 0;          // per step and replica
  int chunks = 0;                // stages per rank (0: the family's default)
  std::string layers_per_stage;  // blocks per virtual stage; empty: balanced by cost
  std::string schedule_costs;    // the cost model a .pipe program was compiled with; empty: none
  std::string why;               // how `auto` decided; empty when the request named everything

  template <class V> void VisitFields(V& v) { Visit(*this, v); }
  template <class V> void VisitFields(V& v) const { Visit(*this, v); }

 private:
  template <class Self, class V>
  static void Visit(Self& p, V& v) {
    v(p.schedule, {"schedule", "The schedule that runs: a built-in family or a schedule file"});
    v(p.pp, {"pp", "Pipeline ranks", 1, 4096});
    v(p.microbatches, {"microbatches", "Microbatches per step and replica", 1, 1 << 20});
    v(p.chunks, {"chunks", "Stages per rank (0: the family's default)", 0, 64});
    v(p.layers_per_stage, {"layers_per_stage", "Blocks per virtual stage (empty: balanced by cost)"});
    v(p.schedule_costs, {"schedule_costs", "Cost model the .pipe program was compiled with"});
    v(p.why, {"why", "How schedule or layers `auto` decided"});
  }
};

// The settings the ranks run with: `request` with the plan's schedule,
// shape, split and costs, the plan's `why` in plan_why and the request
// itself (its fields as JSON) in `request_json`, so a rank's checkpoint
// manifest can record both.
TrainJob ApplyPlan(const TrainJob& request, const ResolvedTrainPlan& plan);

// The plan a job carries: its schedule, shape, split, costs and plan_why
// (the inverse of ApplyPlan for the plan's part). For a request not yet
// planned: the request's own values and no `why`, the planner's start.
ResolvedTrainPlan PlanOf(const TrainJob& job);

}  // namespace pw
