#include "harvest/bubble_edge_predictor.h"

#include <algorithm>
#include <cmath>

namespace pw {

BubbleEdgePredictor::BubbleEdgePredictor(size_t program_size, double min_resume_us)
    : min_resume_us_(min_resume_us), history_(program_size + 1) {}

bool BubbleEdgePredictor::OnIdle(const IdleEdge& edge, TimePoint now) {
  if (idle_) return false;
  idle_ = true;
  idle_since_ = now;
  open_edge_ = edge.action_index;
  return true;
}

std::optional<double> BubbleEdgePredictor::OnBusy(TimePoint now) {
  if (!idle_) return std::nullopt;
  idle_ = false;
  const double seconds = std::chrono::duration<double>(now - idle_since_).count();
  Learn(open_edge_, seconds * 1e6);
  return seconds;
}

double BubbleEdgePredictor::PredictedUs(const IdleEdge& edge) const {
  if (!simulated_) return 0;
  double predicted = simulated_->PredictedUs(edge);
  if (const size_t k = static_cast<size_t>(edge.action_index + 1); k < history_.size()) {
    const EdgeHistory& h = history_[k];
    if (h.seen >= kObservedEdges) predicted = std::max(predicted, h.mean_us - h.deviation_us);
  }
  return predicted;
}

std::optional<double> BubbleEdgePredictor::BudgetUs(const IdleEdge& edge) const {
  if (!simulated_) return std::nullopt;
  const double budget = PredictedUs(edge);
  if (budget < min_resume_us_) return std::nullopt;
  return budget;
}

int64_t BubbleEdgePredictor::TimesSeen(int action_index) const {
  const size_t k = static_cast<size_t>(action_index + 1);
  return k < history_.size() ? history_[k].seen : 0;
}

void BubbleEdgePredictor::Learn(int action_index, double idle_us) {
  const size_t k = static_cast<size_t>(action_index + 1);
  if (k >= history_.size()) return;  // an index outside the program: not learned
  EdgeHistory& h = history_[k];
  if (h.seen == 0) {
    h.mean_us = idle_us;
  } else {
    h.deviation_us = 0.75 * h.deviation_us + 0.25 * std::abs(idle_us - h.mean_us);
    h.mean_us = 0.75 * h.mean_us + 0.25 * idle_us;
  }
  ++h.seen;
}

}  // namespace pw
