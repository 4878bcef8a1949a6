// ListSchedule: runs a schedule's programs as a list scheduler — each rank
// executes its actions in program order; an action starts when its rank is
// free and its dependencies (schedule/dependencies.h) have ended, plus
// communication time when data crosses ranks. This is the one engine behind
// the simulator (real costs) and the validator's dry run (unit costs).
//
// Cost: O(actions + dependencies), memory O(stages x microbatches).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/status.h"
#include "schedule/dependencies.h"
#include "schedule/schedule.h"

namespace pw {

// Hooks is any type with:
//   double Duration(RankId rank, const Action& a);            // >= 0
//   double CommDelay(const Action& consumer, StageId producer); // >= 0, only for
//                                                              // data crossing ranks
//   void OnAction(RankId rank, size_t index, double start, double end);
// OnAction is called for each rank's actions in program order.
//
// Returns OK when every action ran; InvalidArgument naming rank and position
// for an action out of range (bad stage, microbatch or kind); Deadlock with
// every stuck rank's next action and what it waits for when no rank can move.
template <class Hooks>
Status ListSchedule(const Schedule& schedule, Hooks& hooks);

namespace internal {

// Checks ranges of every action; OK or InvalidArgument naming the first bad one.
Status CheckActionRanges(const Schedule& schedule);

// Builds the Deadlock status: for each rank whose program did not finish,
// its next action and the dependency it waits for.
Status DeadlockStatus(const Schedule& schedule, const std::vector<size_t>& pc,
                      const std::vector<Dependency>& waiting_on, const std::vector<char>& is_waiting);

// Event tables of one run: end times per event slot, and the ranks waiting
// on each slot (an intrusive list: one rank waits on at most one slot).
class EventTable {
 public:
  EventTable(const Schedule& schedule, const DependencyRule& rule);

  size_t Slot(const Dependency& d) const;
  // Slots an action produces when it ends; up to 3.
  int Produced(const Action& a, size_t out[3]);

  double End(size_t slot) const { return end_[slot]; }
  bool Done(size_t slot) const { return !std::isnan(end_[slot]); }
  void SetEnd(size_t slot, double t) { end_[slot] = t; }
  int32_t& WaiterHead(size_t slot) { return waiter_head_[slot]; }

 private:
  size_t cells_;     // stages * microbatches
  size_t stage_done_base_;
  int num_microbatches_;
  const Schedule& schedule_;
  const DependencyRule& rule_;
  std::vector<double> end_;
  std::vector<int32_t> waiter_head_;
  std::vector<int32_t> grads_done_;  // per stage: microbatches whose weight grads ended
};

}  // namespace internal

template <class Hooks>
Status ListSchedule(const Schedule& schedule, Hooks& hooks) {
  PW_RETURN_IF_ERROR(internal::CheckActionRanges(schedule));
  const int p = schedule.num_ranks();
  const Placement& placement = schedule.placement;
  DependencyRule rule(schedule);
  internal::EventTable events(schedule, rule);

  std::vector<size_t> pc(p, 0);
  std::vector<double> free_at(p, 0.0);
  std::vector<int32_t> next_waiter(p, -1);
  std::vector<Dependency> waiting_on(p);
  std::vector<char> is_waiting(p, 0);
  std::vector<int32_t> ready;
  ready.reserve(p);
  for (int r = p - 1; r >= 0; --r) ready.push_back(r);

  std::vector<Dependency> deps;
  size_t produced[3];
  size_t finished_ranks = 0;
  while (!ready.empty()) {
    const RankId r = ready.back();
    ready.pop_back();
    is_waiting[r] = 0;
    const Program& program = schedule.programs[r];
    while (pc[r] < program.size()) {
      const Action& a = program[pc[r]];
      rule.Collect(a, deps);
      double start = free_at[r];
      bool blocked = false;
      for (const Dependency& d : deps) {
        size_t slot = events.Slot(d);
        if (!events.Done(slot)) {
          // Park this rank on the slot; the producer wakes it.
          next_waiter[r] = events.WaiterHead(slot);
          events.WaiterHead(slot) = r;
          waiting_on[r] = d;
          is_waiting[r] = 1;
          blocked = true;
          break;
        }
        double t = events.End(slot);
        if (d.carries_data && placement.RankOf(d.stage) != placement.RankOf(a.stage)) {
          t += hooks.CommDelay(a, d.stage);
        }
        if (t > start) start = t;
      }
      if (blocked) break;
      const double end = start + hooks.Duration(r, a);
      hooks.OnAction(r, pc[r], start, end);
      free_at[r] = end;
      ++pc[r];
      const int n = events.Produced(a, produced);
      for (int i = 0; i < n; ++i) {
        events.SetEnd(produced[i], end);
        for (int32_t w = events.WaiterHead(produced[i]); w != -1;) {
          int32_t next = next_waiter[w];
          next_waiter[w] = -1;
          ready.push_back(w);
          w = next;
        }
        events.WaiterHead(produced[i]) = -1;
      }
    }
    if (pc[r] == program.size()) ++finished_ranks;
  }
  if (finished_ranks != static_cast<size_t>(p)) {
    return internal::DeadlockStatus(schedule, pc, waiting_on, is_waiting);
  }
  return Status::Ok();
}

}  // namespace pw
