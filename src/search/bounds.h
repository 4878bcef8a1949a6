// Lower bounds on what any schedule of a family can achieve, where a family
// fixes the placement, the per-stage costs and whether the backward is
// split. The planner visits families in order of their time bound and skips
// a family whose bound cannot beat the best makespan found so far; reports
// show each schedule's distance from the bound.
//
// Time: every rank r must run all its actions (work_r, the sum of their
// costs). It cannot start before microbatch 0's forward reaches its first
// stage (head_r), and with fused backward its last action is the backward
// of its first stage, after which the backwards of every earlier stage still
// run (tail_r). So makespan >= head_r + work_r + tail_r for every r, and >=
// one microbatch's own critical path. Both are valid for any order the
// compiler or a generator may choose, under the simulator's semantics
// (communication included).
//
// Memory: a rank holds its static bytes plus at least one microbatch of its
// largest stage (a forward allocates before its backward frees).
//
// Pure functions; safe to call concurrently.
#pragma once

#include <vector>

#include "schedule/placement.h"
#include "sim/cost_model.h"

namespace pw::search {

struct FamilyBounds {
  double time = 0;          // max(head + work + tail over ranks, critical path)
  double work = 0;          // the busiest rank's total work (m * its per-microbatch cost)
  RankId busiest_rank = 0;  // the rank that attains `work`
  double memory = 0;        // max over ranks of static + largest stage activation
};

// `costs` must hold one resolved entry per stage of `placement` (or one
// for all); `num_microbatches` >= 1.
FamilyBounds ComputeBounds(const Placement& placement, const CostModel& costs, int num_microbatches,
                           bool split_backward);

// head_r + work_r + tail_r for each rank r (the per-rank terms of
// FamilyBounds::time), for balancing stage boundaries.
std::vector<double> RankTimeBounds(const Placement& placement, const CostModel& costs, int num_microbatches,
                                   bool split_backward);

}  // namespace pw::search
