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
// If `ran` is given, it receives per rank how many actions ran (a prefix of
// its program; all of them unless the schedule deadlocks).
template <class Hooks>
Status ListSchedule(const Schedule& schedule, Hooks& hooks, std::vector<size_t>* ran = nullptr);

namespace internal {

// Checks ranges of every action and that it runs on the rank that owns its
// stage; OK or InvalidArgument naming the first bad one.
Status CheckActionRanges(const Schedule& schedule);

// Builds the Deadlock status: for each rank whose program did not finish,
// its next action and the dependency it waits for.
Status DeadlockStatus(const Schedule& schedule, const std::vector<size_t>& pc,
                      const std::vector<Dependency>& waiting_on, const std::vector<char>& is_waiting);

// What has happened in one run. Two tables, because two kinds of waiting
// differ in cost:
//  - a dependency on another rank needs the producer's end time (plus
//    communication): only F and B/I events cross ranks, and their times are
//    read soon after they are written;
//  - a dependency on the same rank needs only to know that the producer ran
//    (it ended before this rank became free), but may be read long after:
//    1F1B's B(s,mb) reads F(s,mb) up to p microbatches later. One byte per
//    (stage, microbatch) keeps that working set small (p = 1024: 0.5 MB of
//    bytes instead of 12 MB of times), which is what makes large runs fast.
class EventTable {
 public:
  static constexpr size_t kNoSlot = static_cast<size_t>(-1);

  EventTable(const Schedule& schedule, const DependencyRule& rule);

  // Same-rank view: has the event of `d` happened?
  bool Happened(const Dependency& d) const;
  // Cross-rank view, for F and B/I events only: the slot holding its time.
  size_t TimeSlot(const Dependency& d) const {
    return Cell(d.stage, d.microbatch) * 2 + (d.event == EventType::kInputGradDone ? 1 : 0);
  }
  bool HasTime(size_t slot) const { return !std::isnan(time_[slot]); }
  double Time(size_t slot) const { return time_[slot]; }

  // Records that `a` ended at `end`; returns the time slots it filled (at
  // most 2), which ranks of other stages may be waiting on.
  int Record(const Action& a, double end, size_t slots[2]);

 private:
  static constexpr uint8_t kF = 1, kI = 2, kW = 4;
  size_t Cell(StageId s, MicrobatchId mb) const { return static_cast<size_t>(mb) * row_stride_ + s; }

  int num_microbatches_;
  // Cells are microbatch-major: the stages of one microbatch form a row, so
  // a backward wave (every rank touching the same microbatch in turn) stays
  // within a few pages; stage-major rows cost a TLB miss per rank and ran
  // 1.5x slower at p = 1024. Rows are padded to an odd number of half cache
  // lines so that neighbouring rows do not share cache sets.
  size_t row_stride_;
  const DependencyRule& rule_;
  std::vector<double> time_;                  // [cell * 2 + {0: F, 1: B/I}]
  std::vector<uint8_t> happened_;             // [cell]: kF | kI | kW
  std::vector<std::vector<uint8_t>> user_;    // [user kind][cell]
  std::vector<int32_t> grads_done_;           // per stage: microbatches whose weight grads ended
};

}  // namespace internal

template <class Hooks>
Status ListSchedule(const Schedule& schedule, Hooks& hooks, std::vector<size_t>* ran) {
  using internal::EventTable;
  PW_RETURN_IF_ERROR(internal::CheckActionRanges(schedule));
  const int p = schedule.num_ranks();
  const int num_stages = schedule.num_stages();
  const Placement& placement = schedule.placement;
  DependencyRule rule(schedule);
  EventTable events(schedule, rule);

  std::vector<size_t> pc(p, 0);
  std::vector<double> free_at(p, 0.0);
  // A parked rank waits for a time slot filled by another rank, or (kNoSlot)
  // for an event of its own that can never come: that is a deadlock.
  std::vector<size_t> waiting_slot(p, EventTable::kNoSlot);
  std::vector<Dependency> waiting_on(p);
  std::vector<char> is_waiting(p, 0);
  std::vector<int32_t> ready;
  ready.reserve(p);
  for (int r = p - 1; r >= 0; --r) ready.push_back(r);

  std::vector<Dependency> deps;
  size_t filled[2];
  size_t finished_ranks = 0;
  while (!ready.empty()) {
    const RankId r = ready.back();
    ready.pop_back();
    const Program& program = schedule.programs[r];
    while (pc[r] < program.size()) {
      const Action& a = program[pc[r]];
      rule.Collect(a, deps);
      double start = free_at[r];
      bool blocked = false;
      for (const Dependency& d : deps) {
        // The action runs on r (CheckActionRanges enforces placement).
        if (placement.RankOf(d.stage) == r) {
          if (events.Happened(d)) continue;  // it ended before r became free
          waiting_slot[r] = EventTable::kNoSlot;
        } else {
          const size_t slot = events.TimeSlot(d);
          if (events.HasTime(slot)) {
            const double t = events.Time(slot) + (d.carries_data ? hooks.CommDelay(a, d.stage) : 0.0);
            if (t > start) start = t;
            continue;
          }
          waiting_slot[r] = slot;  // the producer's rank wakes r
        }
        waiting_on[r] = d;
        is_waiting[r] = 1;
        blocked = true;
        break;
      }
      if (blocked) break;
      const double end = start + hooks.Duration(r, a);
      hooks.OnAction(r, pc[r], start, end);
      free_at[r] = end;
      ++pc[r];
      const int n = events.Record(a, end, filled);
      if (n == 0) continue;
      // Only ranks of the neighbouring stages read this stage's times.
      for (StageId st : {a.stage - 1, a.stage + 1}) {
        if (st < 0 || st >= num_stages) continue;
        const RankId w = placement.RankOf(st);
        if (w == r || !is_waiting[w]) continue;
        if (waiting_slot[w] == filled[0] || (n > 1 && waiting_slot[w] == filled[1])) {
          is_waiting[w] = 0;
          ready.push_back(w);
        }
      }
    }
    if (pc[r] == program.size()) ++finished_ranks;
  }
  if (ran) *ran = pc;
  if (finished_ranks != static_cast<size_t>(p)) {
    return internal::DeadlockStatus(schedule, pc, waiting_on, is_waiting);
  }
  return Status::Ok();
}

}  // namespace pw
