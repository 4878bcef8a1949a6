#include "core/paired_blocks.h"

#include <algorithm>
#include <cmath>

namespace pw {
namespace {

// One fair, well-mixed bit per (seed, pair): splitmix64's finaliser (as in
// runtime/data.cc and model/gpt.cc, which keep theirs private).
bool AllowedFirst(uint64_t seed, uint64_t pair) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + (pair + 1) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return ((z ^ (z >> 31)) & 1) != 0;
}

}  // namespace

PairedPhase PairedPhaseOf(int64_t step, int block_steps, uint64_t seed) {
  const int64_t k = block_steps < 1 ? 1 : block_steps;
  const int64_t s = step < 0 ? 0 : step;
  const int64_t pair = s / (2 * k);
  const bool first_block = (s % (2 * k)) < k;
  return first_block == AllowedFirst(seed, static_cast<uint64_t>(pair)) ? PairedPhase::kAllowed : PairedPhase::kHeld;
}

double StudentT975(int64_t df) {
  static constexpr double kTable[] = {12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060,
                                      2.2622,  2.2281, 2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199,
                                      2.1098,  2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639,
                                      2.0595,  2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (df < 1) return NAN;
  if (df <= 30) return kTable[df - 1];
  const double z = 1.959963985, n = static_cast<double>(df);
  const double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
  return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * n * n * n);
}

PairedSlowdown ComputePairedSlowdown(const std::vector<double>& step_seconds, int64_t from_step,
                                     int block_steps, uint64_t seed) {
  PairedSlowdown out;
  out.block_steps = block_steps;
  if (block_steps < 1) return out;
  const int64_t span = 2 * static_cast<int64_t>(block_steps);
  const int64_t steps = static_cast<int64_t>(step_seconds.size());
  std::vector<double> r;
  double held_sum = 0, allowed_sum = 0;
  for (int64_t start = (std::max<int64_t>(0, from_step) + span - 1) / span * span; start + span <= steps;
       start += span) {
    double held = 0, allowed = 0;
    bool complete = true;
    for (int64_t s = start; s < start + span && complete; ++s) {
      const double t = step_seconds[s];
      if (!(t > 0) || !std::isfinite(t)) complete = false;
      (PairedPhaseOf(s, block_steps, seed) == PairedPhase::kAllowed ? allowed : held) += t;
    }
    if (!complete || held <= 0) continue;
    if (out.first_step < 0) out.first_step = start;
    r.push_back(allowed / held - 1);
    held_sum += held;
    allowed_sum += allowed;
  }
  out.pairs = static_cast<int64_t>(r.size());
  if (r.empty()) return out;
  const double n = static_cast<double>(r.size());
  double mean = 0;
  for (double x : r) mean += x;
  mean /= n;
  out.slowdown = out.ci95_low = out.ci95_high = mean;
  out.held_step_ms = 1e3 * held_sum / (n * block_steps);
  out.allowed_step_ms = 1e3 * allowed_sum / (n * block_steps);
  if (r.size() < 2) return out;
  double ss = 0;
  for (double x : r) ss += (x - mean) * (x - mean);
  const double half = StudentT975(out.pairs - 1) * std::sqrt(ss / (n - 1) / n);
  out.ci95_low = mean - half;
  out.ci95_high = mean + half;
  return out;
}

}  // namespace pw
