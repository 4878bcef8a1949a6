#include "infer/auto_mode_policy.h"

#include <gtest/gtest.h>

namespace pw {
namespace {

// Predicted: WaS 1 s, CaS 2 s.
constexpr PassCost kWasFaster{1.0, 2.0, PoolMode::kWas};

TEST(AutoModePolicy, WithoutLearningFollowsThePrediction) {
  AutoModePolicy policy(/*learn=*/false);
  for (int pass = 1; pass <= 20; ++pass) {
    EXPECT_EQ(policy.Choose(kWasFaster), PoolMode::kWas);
    EXPECT_EQ(policy.Choose({2.0, 1.0, PoolMode::kCas}), PoolMode::kCas);
    policy.EndPass(PoolMode::kWas, pass, 9.0, kWasFaster);
  }
  EXPECT_EQ(policy.extra_was_s(), 0);  // nothing learned
}

TEST(AutoModePolicy, TheFirstPassTeachesNothingThenTheMeanThenAnEwma) {
  AutoModePolicy policy(/*learn=*/true);
  policy.EndPass(PoolMode::kWas, 1, 5.0, kWasFaster);  // cold
  EXPECT_EQ(policy.extra_was_s(), 0);
  policy.EndPass(PoolMode::kWas, 2, 1.5, kWasFaster);  // 0.5 over
  EXPECT_DOUBLE_EQ(policy.extra_was_s(), 0.5);
  policy.EndPass(PoolMode::kWas, 3, 2.5, kWasFaster);  // 1.5 over: mean 1.0
  EXPECT_DOUBLE_EQ(policy.extra_was_s(), 1.0);
  for (int pass = 4; pass <= 7; ++pass) policy.EndPass(PoolMode::kWas, pass, 1.0, kWasFaster);
  // Passes 4 and 5 still average (weights 1/3, 1/4), then weight 0.2.
  EXPECT_DOUBLE_EQ(policy.extra_was_s(), 1.0 * (2.0 / 3) * (3.0 / 4) * 0.8 * 0.8);
  EXPECT_EQ(policy.extra_cas_s(), 0);
}

TEST(AutoModePolicy, ProbesTheModeNotYetTaughtAfterFourPassesInARow) {
  AutoModePolicy policy(/*learn=*/true);
  for (int pass = 1; pass <= 4; ++pass) {
    EXPECT_EQ(policy.Choose(kWasFaster), PoolMode::kWas) << pass;
    policy.EndPass(PoolMode::kWas, pass, 1.0, kWasFaster);
  }
  EXPECT_EQ(policy.Choose(kWasFaster), PoolMode::kCas);  // CaS never taught
  policy.EndPass(PoolMode::kCas, 5, 2.0, kWasFaster);
  EXPECT_EQ(policy.Choose(kWasFaster), PoolMode::kWas);  // back: the run in a row restarts
}

TEST(AutoModePolicy, CommitsToCasOnlyAfterEightCasPassesWithBothModesTaught) {
  const PassCost cas_faster{2.0, 1.0, PoolMode::kCas};
  AutoModePolicy policy(/*learn=*/true);
  int64_t pass = 0;
  for (int i = 0; i < 8; ++i) policy.EndPass(PoolMode::kCas, ++pass, 1.0, cas_faster);
  EXPECT_FALSE(policy.CasSettled());  // WaS never taught
  for (int i = 0; i < 2; ++i) policy.EndPass(PoolMode::kWas, ++pass, 2.0, cas_faster);
  for (int i = 0; i < 7; ++i) policy.EndPass(PoolMode::kCas, ++pass, 1.0, cas_faster);
  EXPECT_FALSE(policy.CasSettled());  // seven in a row
  policy.EndPass(PoolMode::kCas, ++pass, 1.0, cas_faster);
  EXPECT_TRUE(policy.CasSettled());

  AutoModePolicy plain(/*learn=*/false);
  for (int i = 1; i <= 8; ++i) plain.EndPass(PoolMode::kCas, i, 1.0, cas_faster);
  EXPECT_TRUE(plain.CasSettled());
}

TEST(AutoModePolicy, CommitsToWasWhenSettledOrDecisive) {
  AutoModePolicy plain(/*learn=*/false);
  for (int i = 1; i <= 7; ++i) plain.EndPass(PoolMode::kWas, i, 1.0, kWasFaster);
  EXPECT_FALSE(plain.ShouldCommitToWas(PoolMode::kWas, kWasFaster));
  plain.EndPass(PoolMode::kWas, 8, 1.0, kWasFaster);
  EXPECT_TRUE(plain.ShouldCommitToWas(PoolMode::kWas, kWasFaster));
  EXPECT_FALSE(plain.ShouldCommitToWas(PoolMode::kWas, {2.0, 1.0, PoolMode::kCas}));  // CaS predicted faster

  // Learning: once both are taught, a WaS pass where CaS is at least twice
  // as slow commits at once.
  AutoModePolicy learning(/*learn=*/true);
  learning.EndPass(PoolMode::kWas, 1, 1.0, kWasFaster);  // cold: teaches nothing
  learning.EndPass(PoolMode::kCas, 2, 2.0, kWasFaster);
  EXPECT_FALSE(learning.ShouldCommitToWas(PoolMode::kCas, kWasFaster));  // WaS not taught
  learning.EndPass(PoolMode::kWas, 3, 1.0, kWasFaster);
  EXPECT_TRUE(learning.ShouldCommitToWas(PoolMode::kWas, kWasFaster));
  EXPECT_FALSE(learning.ShouldCommitToWas(PoolMode::kCas, kWasFaster));  // not after a CaS pass
  EXPECT_FALSE(learning.ShouldCommitToWas(PoolMode::kWas, {1.0, 1.5, PoolMode::kWas}));  // not decisive
}

}  // namespace
}  // namespace pw
