// The paired measurement's phases (deterministic, balanced, seeded) and
// statistics (a known series gives the known mean and interval).
#include "core/paired_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace pw {
namespace {

TEST(PairedTest, PhasesAreBalancedBlocksInEveryPair) {
  for (int k : {1, 2, 5}) {
    for (int64_t pair = 0; pair < 200; ++pair) {
      const int64_t start = pair * 2 * k;
      const PairedPhase first = PairedPhaseOf(start, k, 1234);
      int allowed = 0;
      for (int i = 0; i < 2 * k; ++i) {
        const PairedPhase p = PairedPhaseOf(start + i, k, 1234);
        // Two contiguous blocks of k: the first block's phase, then the other.
        EXPECT_EQ(p == first, i < k) << "k " << k << " pair " << pair << " step " << start + i;
        allowed += p == PairedPhase::kAllowed ? 1 : 0;
      }
      EXPECT_EQ(allowed, k);
    }
  }
}

TEST(PairedTest, PhasesAreDeterministicAndSeeded) {
  int allowed_first = 0, differ = 0;
  for (int64_t pair = 0; pair < 1000; ++pair) {
    const int64_t step = pair * 8;
    const PairedPhase a = PairedPhaseOf(step, 4, 1234);
    EXPECT_EQ(a, PairedPhaseOf(step, 4, 1234));  // every rank computes the same
    allowed_first += a == PairedPhase::kAllowed ? 1 : 0;
    differ += a != PairedPhaseOf(step, 4, 99) ? 1 : 0;
  }
  // The order is a fair coin per pair, and another seed draws other coins.
  EXPECT_GT(allowed_first, 430);
  EXPECT_LT(allowed_first, 570);
  EXPECT_GT(differ, 400);
  EXPECT_LT(differ, 600);
}

TEST(PairedTest, StudentQuantiles) {
  EXPECT_NEAR(StudentT975(1), 12.706, 1e-3);
  EXPECT_NEAR(StudentT975(3), 3.182, 1e-3);
  EXPECT_NEAR(StudentT975(30), 2.042, 1e-3);
  EXPECT_NEAR(StudentT975(31), 2.0395, 1e-3);   // the expansion joins the table
  EXPECT_NEAR(StudentT975(60), 2.0003, 1e-3);
  EXPECT_NEAR(StudentT975(120), 1.9799, 1e-3);
  EXPECT_NEAR(StudentT975(100000), 1.96, 1e-3);
}

// Held steps take 1 s; pair p's allowed steps take 1 + r[p] s.
std::vector<double> Series(const std::vector<double>& r, int k, uint64_t seed, int64_t offset = 0) {
  std::vector<double> steps(offset + r.size() * 2 * k, 0.0);
  for (size_t p = 0; p < r.size(); ++p) {
    for (int i = 0; i < 2 * k; ++i) {
      const int64_t s = offset + static_cast<int64_t>(p) * 2 * k + i;
      steps[s] = PairedPhaseOf(s, k, seed) == PairedPhase::kAllowed ? 1 + r[p] : 1;
    }
  }
  return steps;
}

TEST(PairedTest, KnownSeriesGivesKnownMeanAndInterval) {
  const std::vector<double> steps = Series({0.01, 0.03, 0.02, 0.02}, 2, 7);
  const PairedSlowdown s = ComputePairedSlowdown(steps, 0, 2, 7);
  EXPECT_EQ(s.pairs, 4);
  EXPECT_EQ(s.first_step, 0);
  EXPECT_NEAR(s.slowdown, 0.02, 1e-12);
  // sd = sqrt(2e-4 / 3), half width = t(3) sd / sqrt(4).
  const double half = 3.1824 * std::sqrt(2e-4 / 3) / 2;
  EXPECT_NEAR(s.ci95_low, 0.02 - half, 1e-6);
  EXPECT_NEAR(s.ci95_high, 0.02 + half, 1e-6);
  EXPECT_NEAR(s.held_step_ms, 1000, 1e-9);
  EXPECT_NEAR(s.allowed_step_ms, 1020, 1e-9);
}

TEST(PairedTest, CountsOnlyCompletePairsFromTheFirstStep) {
  // Pair 0 (steps 0-3) starts before from_step 1; pair 2 misses a step.
  std::vector<double> steps = Series({0.5, 0.01, 0.7, 0.03}, 2, 7);
  steps[9] = NAN;
  const PairedSlowdown s = ComputePairedSlowdown(steps, 1, 2, 7);
  EXPECT_EQ(s.pairs, 2);
  EXPECT_EQ(s.first_step, 4);
  EXPECT_NEAR(s.slowdown, 0.02, 1e-12);
  // None: no pair, no figure.
  EXPECT_EQ(ComputePairedSlowdown(steps, 100, 2, 7).pairs, 0);
  EXPECT_EQ(ComputePairedSlowdown({}, 0, 2, 7).pairs, 0);
  // One pair: a figure without an interval.
  const PairedSlowdown one = ComputePairedSlowdown(Series({0.04}, 3, 1), 0, 3, 1);
  EXPECT_EQ(one.pairs, 1);
  EXPECT_NEAR(one.ci95_low, 0.04, 1e-12);
  EXPECT_NEAR(one.ci95_high, 0.04, 1e-12);
}

TEST(PairedTest, DriftCancelsAndAOnePercentEffectIsResolved) {
  // The machine slows by 0.05 % per step (30 % over the run), noise-free:
  // the seeded order turns the drift into noise around the true effect.
  const int k = 3;
  const int pairs = 100;
  for (double effect : {0.0, 0.01}) {
    std::vector<double> steps(2 * k * pairs);
    for (size_t s = 0; s < steps.size(); ++s) {
      const double base = 0.1 * (1 + 0.0005 * static_cast<double>(s));
      const bool allowed = PairedPhaseOf(static_cast<int64_t>(s), k, 1234) == PairedPhase::kAllowed;
      steps[s] = allowed ? base * (1 + effect) : base;
    }
    const PairedSlowdown r = ComputePairedSlowdown(steps, 0, k, 1234);
    EXPECT_EQ(r.pairs, pairs);
    EXPECT_LE(r.ci95_low, effect) << r.slowdown;
    EXPECT_GE(r.ci95_high, effect) << r.slowdown;
    EXPECT_LT(r.ci95_high - r.ci95_low, 0.01);  // resolves 1 %
  }
}

}  // namespace
}  // namespace pw
