// Plan: the automated scheduler behind `pipewright plan`. Given ranks,
// microbatches, a cost table (per stage or per layer) and a memory cap, it
// searches the schedule space — placements (sequential, interleaved v=2..4,
// V-shape), fused or split backward, stage boundaries when layers are
// given, and .pipe order policies (search/policy_space.h) compiled by
// dsl/compiler.h — plus every built-in generator as a seed. Each candidate
// is simulated (sim/simulator.h, no spans); those over the cap are kept in
// the report but never win.
//
// Order of the search (docs/planner.md):
//   0. the built-ins, on the uniform stage split (and, with layers, on the
//      balanced one): the first incumbent and the comparison;
//   1. every family's start points, families by ascending lower bound
//      (search/bounds.h); a family whose bound cannot beat the incumbent is
//      skipped, now and in every later phase that chases time;
//   2. coordinate descent in each family, best first, then per-rank
//      warm-ups for the leader when it is above its bound;
//   3. tighter memory levels in the three best families, for the lean end
//      of the time/memory Pareto front (no pruning by time there).
//
// The result holds the best schedule (as a .pipe program, the compiled
// Schedule and its simulation), the best built-in for comparison, the
// Pareto front, the best few, the lower bound of the whole space, and what
// the search cost.
//
// Determinism: the search visits candidates in an order fixed by the
// request and `seed`; only the time limit can cut it short at a point that
// depends on the machine (stats.timed_out says so). Set max_candidates (and
// a generous time limit) for a result that is the same on every machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "dsl/pipe_program.h"
#include "schedule/schedule.h"
#include "search/family.h"
#include "search/harvest_score.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"

namespace pw::search {

struct PlanRequest {
  int ranks = 4;         // p >= 1
  int microbatches = 8;  // m >= 1
  // Costs: `stages` holds one entry (every stage alike), one per stage of
  // the user's split (K entries describe the model as K equal pieces), or,
  // with num_layers > 0, one entry or one per layer. Comm, static memory
  // and kind costs apply as given; memory_cap is the default cap.
  CostModel costs;
  int num_layers = 0;    // > 0: choose stage boundaries between layers
  std::optional<double> memory_cap;  // bytes per rank; overrides costs.memory_cap
  double time_limit_s = 10;
  int64_t max_candidates = 0;        // 0: no limit besides time
  uint64_t seed = 1;                 // order of the local search's moves
  size_t keep_top = 10;              // how many of the best to report
  SpaceOptions space;
  // With a side task's profile every candidate is also scored by the side
  // work its bubbles hold (search/harvest_score.h), and the result gets a
  // harvest pick beside the fastest schedule.
  std::optional<SideTaskProfile> side_task;
};

// One evaluated schedule.
struct CandidateSummary {
  size_t id = 0;                 // order of evaluation
  std::string origin;            // "policy", "built-in", "built-in order" (a built-in on balanced layers)
  std::string name;              // built-in label ("zb-v") or "policy"
  std::string family;            // Family::Describe()
  std::string policy;            // DescribePolicy(), or the built-in label
  int num_stages = 0;
  std::vector<int> layers_per_stage;
  double makespan = 0;
  double peak_memory = 0;        // max over ranks, static included
  double bubble_ratio = 0;
  double lower_bound = 0;        // of its family
  bool fits = true;              // within the memory cap
  // With PlanRequest::side_task: task time its bubbles hold per step, over
  // all ranks and on the best rank; and net = side_work - ranks x (makespan
  // - the fastest makespan found).
  double side_work = 0;
  double side_work_best_rank = 0;
  double net_gain = 0;
};

struct PlannedSchedule {
  CandidateSummary summary;
  dsl::PipeProgram program;      // a policy, or pinned programs for a built-in order;
                                 // with layers, its layers_per_stage is the split
  bool pinned = false;           // program pins every rank's actions
  Schedule schedule;
  CostModel costs;               // per stage, resolved against `schedule`, cap set
  SimResult sim;
  // The step `train` would measure: the schedule lowered with sends,
  // receives, gradient sync and the optimizer step at the cost model's
  // prices (search/step_prediction.h); 0 when it cannot be lowered.
  double training_step = 0;
};

struct SearchStats {
  int64_t evaluated = 0;         // candidates compiled (or generated) and simulated
  int64_t over_cap = 0;          // evaluated but over the memory cap
  int64_t failed = 0;            // could not compile (e.g. cap below one microbatch)
  int64_t families = 0;          // families in the space
  int64_t families_pruned = 0;   // skipped by their lower bound
  int64_t candidates_pruned = 0; // policy points in the skipped families
  double seconds = 0;             // wall clock (what --time-limit bounds)
  double cpu_seconds = 0;         // this process's CPU time, for machines under load
  bool timed_out = false;        // stopped by the time limit or max_candidates
};

struct PlanResult {
  PlannedSchedule best;
  // The best built-in (uniform stage split) within the cap, if any fits.
  std::optional<CandidateSummary> best_builtin;
  std::vector<CandidateSummary> builtins;  // every built-in seed evaluated
  std::vector<CandidateSummary> pareto;    // within the cap, makespan ascending
  std::vector<CandidateSummary> top;       // within the cap, best keep_top by makespan
  std::vector<CandidateSummary> evaluated; // everything, in evaluation order
  // With PlanRequest::side_task: the schedule with the largest net gain
  // (ties: the faster), and the best keep_top by net gain.
  std::optional<PlannedSchedule> harvest_pick;
  std::vector<CandidateSummary> harvest_top;
  double lower_bound = 0;                  // no schedule in the space is faster
  std::optional<double> memory_cap;        // the cap applied
  bool memory_in_microbatches = false;     // memory figures count microbatch shares
  SearchStats stats;
};

// Runs the search. Blocks for at most about time_limit_s (plus one
// candidate); pure apart from reading the clock; safe to call concurrently.
// Fails with InvalidArgument for a malformed request (bad shape, a cost
// table whose length fits neither stages nor layers, more stages than
// layers everywhere) and with FailedPrecondition when no schedule fits the
// memory cap (the message gives the leanest one found and its peak).
Result<PlanResult> Plan(const PlanRequest& request);

}  // namespace pw::search
