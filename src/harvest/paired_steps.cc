#include "harvest/paired_steps.h"

#include <algorithm>
#include <cmath>

namespace pw {

PairedPhase PairedBlockSchedule::ArmOf(int64_t step) const {
  if (!enabled()) return PairedPhase::kAllowed;
  return PairedPhaseOf(step, block_steps_, seed_);
}

PairedStepLog::PairedStepLog(PairedBlockSchedule schedule, int64_t steps) : schedule_(schedule) {
  if (schedule_.enabled()) step_end_s_.assign(static_cast<size_t>(std::max<int64_t>(0, steps)) + 1, NAN);
}

void PairedStepLog::MarkFrom(int64_t step) {
  if (schedule_.enabled() && from_step_ < 0) from_step_ = step;
}

bool PairedStepLog::RecordStepEnd(int64_t step, double seconds) {
  if (step < 0 || static_cast<size_t>(step) >= step_end_s_.size()) return false;
  step_end_s_[static_cast<size_t>(step)] = seconds;
  return true;
}

std::optional<PairedSlowdown> PairedStepLog::Slowdown() const {
  if (!schedule_.enabled()) return std::nullopt;
  std::vector<double> seconds(step_end_s_.size(), NAN);
  for (size_t i = 1; i < seconds.size(); ++i) seconds[i] = step_end_s_[i] - step_end_s_[i - 1];
  // Before MarkFrom no pair counts: a start past any step.
  const int64_t from = from_step_ >= 0 ? from_step_ : INT64_MAX / 2;
  return ComputePairedSlowdown(seconds, from, schedule_.block_steps(), schedule_.seed());
}

}  // namespace pw
