#include "runtime/action_overheads.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace pw {
namespace {

// The q-quantile (0..1) of `v` by nearest rank; 0 for an empty vector.
double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

double End(const TimelineSpan& s) { return s.step_origin_us + s.start_us + s.dur_us; }
double Start(const TimelineSpan& s) { return s.step_origin_us + s.start_us; }

bool IsRecv(ActionKind k) { return k == ActionKind::kRecvForward || k == ActionKind::kRecvBackward; }

}  // namespace

ActionOverheads MeasureActionOverheads(const std::vector<std::vector<TimelineSpan>>& ranks, int64_t from_step) {
  std::map<ActionKind, std::vector<double>> durations_ms;
  // Per step: per rank, OPT time and OPT count.
  std::map<int64_t, std::map<size_t, std::pair<double, int>>> opt;
  // (step, stage, microbatch, produces_gradient) -> the producer's end, us.
  std::map<std::tuple<int64_t, int, int, bool>, double> produced;
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (const TimelineSpan& s : ranks[r]) {
      if (s.step < from_step) continue;
      if (s.kind == ActionKind::kForward) produced[{s.step, s.stage, s.microbatch, false}] = End(s);
      if (s.kind == ActionKind::kBackward || s.kind == ActionKind::kBackwardInput) {
        produced[{s.step, s.stage, s.microbatch, true}] = End(s);
      }
      if (s.kind == ActionKind::kOptimizer) {
        auto& [ms, count] = opt[s.step][r];
        ms += s.dur_us / 1000.0;
        ++count;
      } else if (!IsCompute(s.kind) && s.kind != ActionKind::kIdle) {
        durations_ms[s.kind].push_back(s.dur_us / 1000.0);
      }
    }
  }
  ActionOverheads out;
  const std::pair<ActionKind, const char*> median_kinds[] = {{ActionKind::kSendForward, "SEND_F"},
                                                              {ActionKind::kSendBackward, "SEND_B"},
                                                              {ActionKind::kReduceGrad, "REDUCE_GRAD"}};
  for (const auto& [kind, name] : median_kinds) {
    if (auto it = durations_ms.find(kind); it != durations_ms.end()) out.kind_costs[name] = Quantile(it->second, 0.5);
  }
  const std::pair<ActionKind, const char*> recv_kinds[] = {{ActionKind::kRecvForward, "RECV_F"},
                                                            {ActionKind::kRecvBackward, "RECV_B"}};
  for (const auto& [kind, name] : recv_kinds) {
    if (auto it = durations_ms.find(kind); it != durations_ms.end()) out.kind_costs[name] = Quantile(it->second, 0.1);
  }
  std::vector<double> opt_per_step;
  for (const auto& [step, per_rank] : opt) {
    double least = std::numeric_limits<double>::infinity();
    for (const auto& [rank, total] : per_rank) least = std::min(least, total.first / total.second);
    opt_per_step.push_back(least);
  }
  if (!opt_per_step.empty()) out.kind_costs["OPT"] = Quantile(opt_per_step, 0.5);

  std::vector<double> latencies_ms;
  for (const auto& spans : ranks) {
    for (const TimelineSpan& s : spans) {
      if (s.step < from_step || !IsRecv(s.kind)) continue;
      const bool gradient = s.kind == ActionKind::kRecvBackward;
      auto it = produced.find({s.step, gradient ? s.stage + 1 : s.stage - 1, s.microbatch, gradient});
      if (it == produced.end() || Start(s) >= it->second) continue;  // the data may have been there
      const double fixed = out.kind_costs[gradient ? "RECV_B" : "RECV_F"];
      latencies_ms.push_back(std::max(0.0, (End(s) - it->second) / 1000.0 - fixed));
    }
  }
  out.latency_samples = static_cast<int>(latencies_ms.size());
  out.link_latency_ms = Quantile(latencies_ms, 0.5);

  std::vector<double> gaps_ms;
  for (const auto& spans : ranks) {
    const TimelineSpan* previous = nullptr;
    for (const TimelineSpan& s : spans) {  // a rank's spans are in program order
      if (s.step < from_step) continue;
      if (previous != nullptr && previous->step == s.step) {
        gaps_ms.push_back(std::max(0.0, (Start(s) - End(*previous)) / 1000.0));
      }
      previous = &s;
    }
  }
  out.action_overhead_samples = static_cast<int>(gaps_ms.size());
  out.action_overhead_ms = Quantile(gaps_ms, 0.5);
  return out;
}

void AddActionOverheads(const ActionOverheads& overheads, CostModel& costs) {
  for (const auto& [name, ms] : overheads.kind_costs) costs.kind_costs[name] = ms;
  if (overheads.action_overhead_samples > 0) costs.action_overhead = overheads.action_overhead_ms;
  if (overheads.latency_samples > 0) {
    costs.comm_latency = overheads.link_latency_ms;
    costs.comm_bandwidth = std::numeric_limits<double>::infinity();
  }
}

}  // namespace pw
