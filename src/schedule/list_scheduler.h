// ListSchedule: runs a schedule's programs as a list scheduler — each rank
// executes its actions in program order; an action starts when its rank is
// free and its dependencies (schedule/dependencies.h) have ended, plus
// communication time when data crosses ranks. This is the one engine behind
// the simulator (real costs) and the validator's dry run (unit costs).
//
// Cost: O(actions + dependencies), memory O(stages x microbatches).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
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
// stage; OK or InvalidArgument naming the first bad one (in rank, then
// program order). Includes CheckScheduleShape.
Status CheckActionRanges(const Schedule& schedule);

// One program per rank and at least one microbatch; OK or InvalidArgument.
Status CheckScheduleShape(const Schedule& schedule);

// The test CheckActionRanges makes of each action, for one action at a
// time: ListSchedule asks it of each action as it comes to run, instead of
// a pass over every action first (a pass over 200 MB at p = 1024, m = 8192,
// 5 % of `schedule sim`), and calls CheckActionRanges for the message when
// it fails. `schedule` must outlive this object.
class ActionRanges {
 public:
  explicit ActionRanges(const Schedule& schedule);
  // True if `a` may run on `rank`: a registered kind; unless it is idle, a
  // stage that `rank` owns and a microbatch in range (or none, for kinds
  // that take none).
  bool Runnable(const Action& a, RankId rank) const {
    const int k = static_cast<int>(a.kind);
    // One unsigned compare per range: a microbatch in [first, first + count).
    if (static_cast<uint32_t>(a.stage) < static_cast<uint32_t>(num_stages_) &&
        static_cast<uint64_t>(int64_t{a.microbatch} - mb_first_[k]) < mb_count_[k] && owner_[a.stage] == rank) {
      return true;
    }
    return a.kind == ActionKind::kIdle && idle_known_;
  }

 private:
  int num_stages_;
  const RankId* owner_;  // stage -> rank
  bool idle_known_ = false;
  // Per kind id, the microbatches it may name: [0, m) for kinds that take
  // one, {kNoMicrobatch} for kinds that take none, nothing for unknown ids.
  std::array<int64_t, kMaxKinds> mb_first_{};
  std::array<uint64_t, kMaxKinds> mb_count_{};
};

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

  // Same-rank view: has the event of `d` happened? Inline for the compute
  // events, which every action of a pipeline asks about.
  bool Happened(const Dependency& d) const {
    switch (d.event) {
      case EventType::kForwardDone: return happened_[Cell(d.stage, d.microbatch)] & kF;
      case EventType::kInputGradDone: return happened_[Cell(d.stage, d.microbatch)] & kI;
      case EventType::kWeightGradDone: return happened_[Cell(d.stage, d.microbatch)] & kW;
      default: return HappenedOther(d);
    }
  }
  // Cross-rank view, for F and B/I events only: the slot holding its time.
  size_t TimeSlot(const Dependency& d) const {
    return Cell(d.stage, d.microbatch) * 2 + (d.event == EventType::kInputGradDone ? 1 : 0);
  }
  // From the event bits, not the time: a slot whose event has not happened
  // was never written, and its line of time_ is cold (a DRAM miss per
  // blocked rank at p = 1024), while the bits of a row share a line.
  bool HasTime(size_t slot) const { return happened_[slot >> 1] & (slot & 1 ? kI : kF); }
  double Time(size_t slot) const { return time_[slot]; }

  // Records that `a` ended at `end`; returns the time slot it filled (F, B
  // and I fill one), which a rank of a neighbouring stage may be waiting
  // on, or kNoSlot. Inline for the compute kinds, as Happened.
  size_t Record(const Action& a, double end) {
    switch (a.kind) {
      case ActionKind::kForward: {
        const size_t c = Cell(a.stage, a.microbatch);
        happened_[c] |= kF;
        time_[2 * c] = end;
        return 2 * c;
      }
      case ActionKind::kBackward:
      case ActionKind::kBackwardInput: {
        const size_t c = Cell(a.stage, a.microbatch);
        happened_[c] |= a.kind == ActionKind::kBackward ? (kI | kW) : kI;
        time_[2 * c + 1] = end;
        if (a.kind == ActionKind::kBackward) ++grads_done_[a.stage];
        return 2 * c + 1;
      }
      case ActionKind::kBackwardWeight:
        happened_[Cell(a.stage, a.microbatch)] |= kW;
        ++grads_done_[a.stage];
        return kNoSlot;
      default:
        RecordOther(a);
        return kNoSlot;
    }
  }

 private:
  bool HappenedOther(const Dependency& d) const;  // stage-wide and user-kind events
  void RecordOther(const Action& a);              // user kinds
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
  // [cell * 2 + {0: F, 1: B/I}]; written before it is read (HasTime), so
  // left uninitialized: its pages are touched only where events happen.
  std::unique_ptr<double[]> time_;
  std::vector<uint8_t> happened_;             // [cell]: kF | kI | kW
  std::vector<std::vector<uint8_t>> user_;    // [user kind][cell]
  std::vector<int32_t> grads_done_;           // per stage: microbatches whose weight grads ended
};

}  // namespace internal

template <class Hooks>
Status ListSchedule(const Schedule& schedule, Hooks& hooks, std::vector<size_t>* ran) {
  using internal::EventTable;
  PW_RETURN_IF_ERROR(internal::CheckScheduleShape(schedule));
  const internal::ActionRanges ranges(schedule);
  const int p = schedule.num_ranks();
  const int num_stages = schedule.num_stages();
  const RankId* const rank_of = schedule.placement.stage_to_rank().data();
  DependencyRule rule(schedule);
  EventTable events(schedule, rule);

  // What the loop needs of a rank, in one struct: in a pipeline the ranks
  // take turns every action or two (1F1B at p = 1024: 8.4 M switches for
  // 16.7 M actions), and each switch then touches one cache line instead of
  // one per array.
  struct RankState {
    const Action* next;       // the next action to run
    const Action* end;        // one past the program's last action
    double free_at = 0;       // when the rank's last action ended
    // A parked rank waits for a time slot filled by another rank, or
    // (kNoSlot) for an event of its own that can never come: a deadlock.
    size_t waiting_slot = EventTable::kNoSlot;
    bool is_waiting = false;
  };
  std::vector<RankState> ranks(p);
  for (int r = 0; r < p; ++r) {
    ranks[r].next = schedule.programs[r].data();
    ranks[r].end = ranks[r].next + schedule.programs[r].size();
    if (ranks[r].next != ranks[r].end && !ranges.Runnable(*ranks[r].next, r)) {
      return internal::CheckActionRanges(schedule);
    }
  }
  std::vector<Dependency> waiting_on(p);
  std::vector<int32_t> ready;
  ready.reserve(p);
  for (int r = p - 1; r >= 0; --r) ready.push_back(r);

  std::vector<Dependency> deps;
  deps.reserve(8);
  size_t finished_ranks = 0;
  while (!ready.empty()) {
    const RankId r = ready.back();
    ready.pop_back();
    RankState& rs = ranks[r];
    const Action* const first = schedule.programs[r].data();
    while (rs.next != rs.end) {
      const Action& a = *rs.next;  // checked by ranges.Runnable (below)
      rule.Collect(a, deps);
      double start = rs.free_at;
      bool blocked = false;
      for (const Dependency& d : deps) {
        // The action runs on r (ranges.Runnable enforces placement).
        if (rank_of[d.stage] == r) {
          if (events.Happened(d)) continue;  // it ended before r became free
          rs.waiting_slot = EventTable::kNoSlot;
        } else {
          const size_t slot = events.TimeSlot(d);
          if (events.HasTime(slot)) {
            const double t = events.Time(slot) + (d.carries_data ? hooks.CommDelay(a, d.stage) : 0.0);
            if (t > start) start = t;
            continue;
          }
          rs.waiting_slot = slot;  // the producer's rank wakes r
        }
        waiting_on[r] = d;
        rs.is_waiting = true;
        blocked = true;
        break;
      }
      if (blocked) break;
      const double end = start + hooks.Duration(r, a);
      hooks.OnAction(r, static_cast<size_t>(rs.next - first), start, end);
      rs.free_at = end;
      ++rs.next;
      // Each action is checked once, when it becomes the rank's next; the
      // first bad one in rank order is the one to report, as if every
      // action had been checked before the run.
      if (rs.next != rs.end && !ranges.Runnable(*rs.next, r)) return internal::CheckActionRanges(schedule);
      const size_t filled = events.Record(a, end);
      if (filled == EventTable::kNoSlot) continue;
      // By the dependency rule only the next stage reads an F's time (F,
      // RECV_F) and only the previous stage a B's or I's (B, I, RECV_B); all
      // else reads events of its own stage. So one rank may be waiting.
      const StageId reader = a.kind == ActionKind::kForward ? a.stage + 1 : a.stage - 1;
      if (reader < 0 || reader >= num_stages) continue;
      const RankId w = rank_of[reader];
      if (w != r && ranks[w].is_waiting && ranks[w].waiting_slot == filled) {
        ranks[w].is_waiting = false;
        ready.push_back(w);
      }
    }
    if (rs.next == rs.end) ++finished_ranks;
  }
  std::vector<size_t> pc(p);
  std::vector<char> is_waiting(p);
  for (int r = 0; r < p; ++r) {
    pc[r] = static_cast<size_t>(ranks[r].next - schedule.programs[r].data());
    is_waiting[r] = ranks[r].is_waiting ? 1 : 0;
  }
  // A bad action behind the stuck ones is the more basic problem (and,
  // like every range error, leaves `ran` untouched).
  if (finished_ranks != static_cast<size_t>(p)) PW_RETURN_IF_ERROR(internal::CheckActionRanges(schedule));
  if (ran) *ran = pc;
  if (finished_ranks != static_cast<size_t>(p)) {
    return internal::DeadlockStatus(schedule, pc, waiting_on, is_waiting);
  }
  return Status::Ok();
}

}  // namespace pw
