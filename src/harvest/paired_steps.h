// The manager's side of the paired A/B measurement (`--harvest-paired K`;
// core/paired_blocks.h holds the order's hash and the interval math).
//
// PairedBlockSchedule says whether a step is in an allowed block (side tasks
// may run) or a held one: pair p holds steps [2Kp, 2Kp + 2K); its first
// block of K steps is allowed or held by a hash of (seed, p), the second is
// the other arm. Every rank derives it from (step, K, seed) alone, so the
// ranks agree without communication.
//
// PairedStepLog collects the rank's step ends (seconds from any fixed
// origin, passed in) and the first step that counts (the rank's tasks ready
// and its costs measured), and gives the slowdown over the complete pairs
// from there: per pair mean(allowed) / mean(held) - 1, with a 95 % interval.
//
// Pure: no clock is read, no threads, and a log allocates only when built,
// so the training thread can record into it. Thread-safety: one thread (the
// manager's training thread) drives a log; a schedule is immutable.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/paired_blocks.h"

namespace pw {

class PairedBlockSchedule {
 public:
  // No paired measurement: every step is allowed.
  PairedBlockSchedule() = default;
  // Blocks of `block_steps` steps (<= 0: none) in the order `seed` draws.
  PairedBlockSchedule(int block_steps, uint64_t seed) : block_steps_(block_steps), seed_(seed) {}

  bool enabled() const { return block_steps_ > 0; }
  int block_steps() const { return block_steps_; }
  uint64_t seed() const { return seed_; }
  // The arm of absolute step `step` (>= 0; a negative step is step 0):
  // kAllowed or kHeld; always kAllowed when not enabled.
  PairedPhase ArmOf(int64_t step) const;
  bool Held(int64_t step) const { return ArmOf(step) == PairedPhase::kHeld; }

 private:
  int block_steps_ = 0;
  uint64_t seed_ = 0;
};

class PairedStepLog {
 public:
  // Records nothing; Slowdown() is nullopt.
  PairedStepLog() = default;
  // Room for the ends of steps 0 .. `steps` (a negative count is 0) when
  // `schedule` is enabled; nothing is recorded otherwise.
  PairedStepLog(PairedBlockSchedule schedule, int64_t steps);

  const PairedBlockSchedule& schedule() const { return schedule_; }
  // The first step whose pair may count; the first call wins. Ignored when
  // the schedule is not enabled.
  void MarkFrom(int64_t step);
  // -1 until MarkFrom.
  int64_t from_step() const { return from_step_; }
  // Step `step` ended at `seconds` (from the log's origin); the last call
  // for a step wins. False (nothing recorded) outside [0, steps] or when
  // the schedule is not enabled.
  bool RecordStepEnd(int64_t step, double seconds);
  // The slowdown over the complete pairs from from_step (no pair before
  // MarkFrom); a step lasts from the end of the one before to its own end,
  // so step 0 never counts. nullopt when the schedule is not enabled.
  std::optional<PairedSlowdown> Slowdown() const;

 private:
  PairedBlockSchedule schedule_;
  std::vector<double> step_end_s_;  // NaN until seen
  int64_t from_step_ = -1;
};

}  // namespace pw
