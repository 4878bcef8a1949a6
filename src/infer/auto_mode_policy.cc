#include "infer/auto_mode_policy.h"

#include <algorithm>

namespace pw {

PoolMode AutoModePolicy::Choose(const PassCost& cost) const {
  PoolMode mode = CasWinsWithCorrections(cost, extra_was_s_, extra_cas_s_) ? PoolMode::kCas : PoolMode::kWas;
  // A mode never run, or only in the cold first pass, gets one pass (then
  // the measured figures decide).
  if (learn_ && std::max(consecutive_cas_, consecutive_was_) >= kProbeAfterPasses) {
    if (taught_cas_ < kTaughtBeforeDroppingCache && taught_cas_ <= taught_was_) {
      mode = PoolMode::kCas;
    } else if (taught_was_ < kTaughtBeforeDroppingCache) {
      mode = PoolMode::kWas;
    }
  }
  return mode;
}

void AutoModePolicy::EndPass(PoolMode mode, int64_t passes_run, double measured_s, const PassCost& cost) {
  // The mean of the first passes taught, then an EWMA of weight 0.2.
  auto update = [&](double& extra, int64_t& taught, double predicted) {
    const double weight = std::max(0.2, 1.0 / static_cast<double>(++taught));
    extra = (1 - weight) * extra + weight * (measured_s - predicted);
  };
  if (learn_ && passes_run != 1) {
    if (mode == PoolMode::kWas) {
      update(extra_was_s_, taught_was_, cost.was_s);
    } else if (mode == PoolMode::kCas) {
      update(extra_cas_s_, taught_cas_, cost.cas_s);
    }
  }
  consecutive_cas_ = mode == PoolMode::kCas ? consecutive_cas_ + 1 : 0;
  consecutive_was_ = mode == PoolMode::kWas ? consecutive_was_ + 1 : 0;
}

bool AutoModePolicy::CasSettled() const {
  return consecutive_cas_ >= kCommitAfterPasses &&
         (!learn_ || (taught_was_ >= kTaughtBeforeDroppingCache && taught_cas_ >= kTaughtBeforeDroppingCache));
}

bool AutoModePolicy::ShouldCommitToWas(PoolMode mode, const PassCost& cost) const {
  const bool measured_both = taught_was_ > 0 && taught_cas_ > 0;
  const bool settled = consecutive_was_ >= kCommitAfterPasses && (!learn_ || measured_both) &&
                       !CasWinsWithCorrections(cost, extra_was_s_, extra_cas_s_);
  const bool decisive =
      learn_ && measured_both && mode == PoolMode::kWas && WasWinsDecisively(cost, extra_was_s_, extra_cas_s_);
  return settled || decisive;
}

}  // namespace pw
