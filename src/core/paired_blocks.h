// In-run paired measurements: what harvesting costs training
// (`train --harvest-paired K`: side tasks allowed or held) and what
// recomputation costs (`train --recompute-paired K`: DROP and RECOMPUTE run
// or skipped). Separate runs cannot resolve a few percent: their baselines
// move by 5-10 % between runs. Inside one run, steps are cut into pairs of
// adjacent blocks of K steps; in one block of each pair the treatment is
// allowed, in the other held. Which block comes first is drawn per pair
// from a seeded hash, so a slow drift of the machine adds to half the pairs
// and subtracts from the other half. Each pair gives one relative
// difference
//     r = mean(allowed step times) / mean(held step times) - 1,
// and the slowdown is the mean of r over the pairs with a 95 % Student-t
// interval (n - 1 degrees of freedom).
//
// Every rank derives the phase of a step from (step, K, seed) alone, so the
// ranks agree without communication; the seed is the job's --seed.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace pw {

enum class PairedPhase { kAllowed, kHeld };

// The phase of absolute step `step` (>= 0) with blocks of `block_steps`
// (>= 1): pair p = step / (2K) holds steps [2Kp, 2Kp + 2K); its first block
// is allowed or held by a hash of (seed, p). Deterministic; each pair has K
// allowed and K held steps.
PairedPhase PairedPhaseOf(int64_t step, int block_steps, uint64_t seed);

// Student's t quantile at 0.975 for `df` >= 1 degrees of freedom (a table
// to 30, a Cornish-Fisher expansion beyond: error below 1e-4).
double StudentT975(int64_t df);

struct PairedSlowdown {
  int block_steps = 0;
  int64_t pairs = 0;             // complete pairs counted
  int64_t first_step = -1;       // first step of the first counted pair
  double slowdown = 0;           // mean relative difference over pairs
  double ci95_low = 0, ci95_high = 0;  // equal to slowdown when pairs < 2
  double held_step_ms = 0, allowed_step_ms = 0;  // mean step time in counted pairs
};

// The paired slowdown from per-step times: `step_seconds[s]` is absolute
// step s's time, <= 0 or NaN where unknown. A pair counts when its first
// step is >= `from_step` and all its 2K steps are known.
PairedSlowdown ComputePairedSlowdown(const std::vector<double>& step_seconds, int64_t from_step,
                                     int block_steps, uint64_t seed);

}  // namespace pw
