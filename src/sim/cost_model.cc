#include "sim/cost_model.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/text.h"

namespace pw {
namespace {

Result<double> ParseNonNegative(std::string_view text, std::string_view what) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v) || v < 0) {
    return Status::InvalidArgument("cost of " + std::string(what) + " must be a non-negative number, got '" +
                                   std::string(text) + "'");
  }
  return v;
}

Status CheckTime(const std::optional<double>& t, const char* name, size_t stage) {
  if (t && (!std::isfinite(*t) || *t < 0)) {
    return Status::InvalidArgument("stage " + std::to_string(stage) + ": " + name +
                                   " time must be finite and non-negative");
  }
  return Status::Ok();
}

// Fills the unset times of one backward (B, I, W, or their after-recompute
// variants, named with `suffix`): B = I + W (2 when nothing is given); I
// and W share a lone B by `input_share`; one of I and W is B less the other.
Status ResolveBackward(std::optional<double>& b, std::optional<double>& i, std::optional<double>& w,
                       double input_share, const std::string& suffix, size_t stage) {
  if (i.has_value() != w.has_value() && !b) {
    return Status::InvalidArgument("stage " + std::to_string(stage) + ": give both I" + suffix + " and W" + suffix +
                                   " (B" + suffix + " defaults to their sum), or B" + suffix + " alone");
  }
  if (!b) b = i ? *i + *w : 2.0;
  if (!i && !w) {
    i = *b * input_share;
    w = *b - *i;
  } else if (!i) {
    i = std::max(0.0, *b - *w);
  } else if (!w) {
    w = std::max(0.0, *b - *i);
  }
  return Status::Ok();
}

}  // namespace

Status CostModel::ParseUniformCosts(std::string_view spec) {
  if (stages.size() != 1) stages.assign(1, StageCost{});
  StageCost& c = stages[0];
  std::string_view rest = spec;
  if (TrimSpaces(rest).empty()) {
    return Status::InvalidArgument("empty cost list; write e.g. --cost F=1,B=2 or --cost F=1,I=1,W=1");
  }
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = TrimSpaces(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument("cost item '" + std::string(item) +
                                     "' has no '='; write KIND=TIME, e.g. F=1,B=2");
    }
    std::string_view key = TrimSpaces(item.substr(0, eq));
    PW_ASSIGN_OR_RETURN(double v, ParseNonNegative(TrimSpaces(item.substr(eq + 1)), key));
    if (key == "F") c.forward = v;
    else if (key == "B") c.backward = v;
    else if (key == "I") c.backward_input = v;
    else if (key == "W") c.backward_weight = v;
    else if (key.empty()) return Status::InvalidArgument("cost item '" + std::string(item) + "' names no kind");
    else kind_costs[std::string(key)] = v;
  }
  return Status::Ok();
}

Status CostModel::Resolve(const Schedule& schedule) {
  const size_t n = static_cast<size_t>(schedule.num_stages());
  if (stages.empty()) stages.assign(1, StageCost{});
  if (stages.size() != 1 && stages.size() != n) {
    return Status::InvalidArgument("cost table has " + std::to_string(stages.size()) +
                                   " stages but the schedule has " + std::to_string(n) +
                                   "; give one entry for all stages or one per stage");
  }
  if (static_bytes.empty()) static_bytes.assign(1, 0.0);
  if (static_bytes.size() != 1 && static_bytes.size() != static_cast<size_t>(schedule.num_ranks())) {
    return Status::InvalidArgument("static memory has " + std::to_string(static_bytes.size()) +
                                   " entries but the schedule has " + std::to_string(schedule.num_ranks()) +
                                   " ranks; give one for all ranks or one per rank");
  }
  for (size_t s = 0; s < stages.size(); ++s) {
    StageCost& c = stages[s];
    PW_RETURN_IF_ERROR(CheckTime(c.forward, "F", s));
    PW_RETURN_IF_ERROR(CheckTime(c.backward, "B", s));
    PW_RETURN_IF_ERROR(CheckTime(c.backward_input, "I", s));
    PW_RETURN_IF_ERROR(CheckTime(c.backward_weight, "W", s));
    PW_RETURN_IF_ERROR(CheckTime(c.recompute, "RECOMPUTE", s));
    PW_RETURN_IF_ERROR(CheckTime(c.backward_after_recompute, "B_after_recompute", s));
    PW_RETURN_IF_ERROR(CheckTime(c.backward_input_after_recompute, "I_after_recompute", s));
    PW_RETURN_IF_ERROR(CheckTime(c.backward_weight_after_recompute, "W_after_recompute", s));
    if (!c.forward) c.forward = 1.0;
    PW_RETURN_IF_ERROR(ResolveBackward(c.backward, c.backward_input, c.backward_weight, 0.5, "", s));
    if (c.HasBackwardAfterRecompute()) {
      // Split as the stage's own backward splits when only B is given.
      const double input_share = *c.backward > 0 ? *c.backward_input / *c.backward : 0.5;
      PW_RETURN_IF_ERROR(ResolveBackward(c.backward_after_recompute, c.backward_input_after_recompute,
                                         c.backward_weight_after_recompute, input_share, "_after_recompute", s));
    }
    if (c.activation_bytes < 0 || c.output_bytes < 0 || c.freed_by_input < 0 || c.freed_by_input > 1) {
      return Status::InvalidArgument("stage " + std::to_string(s) +
                                     ": byte counts must be non-negative and freed_by_input in [0, 1]");
    }
  }
  if (!(comm_latency >= 0) || !std::isfinite(comm_latency)) {
    return Status::InvalidArgument("--comm-latency must be a finite non-negative number");
  }
  if (!(action_overhead >= 0) || !std::isfinite(action_overhead)) {
    return Status::InvalidArgument("the per-action overhead (--action-overhead, \"action_overhead\") must be a "
                                   "finite non-negative number");
  }
  if (!(comm_bandwidth > 0)) return Status::InvalidArgument("--comm-bandwidth must be positive");
  if (!(host_bandwidth > 0)) {
    return Status::InvalidArgument("the host link's bandwidth (--host-bandwidth, \"host_bandwidth\") must be "
                                   "positive, got " + std::to_string(host_bandwidth));
  }
  {
    Status st = cluster.Check(schedule.num_ranks());
    if (!st.ok()) return st.WithContext("cluster");
  }
  for (const auto& [name, v] : kind_costs) {
    if (!schedule.kinds.Find(name)) {
      return Status::InvalidArgument("cost given for unknown kind '" + name +
                                     "'; known kinds are F, B, I, W, SEND_F, RECV_F, SEND_B, RECV_B, "
                                     "REDUCE_GRAD, OPT and the schedule's own kinds");
    }
  }
  return Status::Ok();
}

double CostModel::Duration(RankId r, const Action& a, const KindRegistry& kinds) const {
  const StageCost& c = Stage(a.stage);
  const double speed = cluster.Speed(r);
  switch (a.kind) {
    case ActionKind::kForward: return speed == 1.0 ? *c.forward : *c.forward / speed;
    case ActionKind::kBackward: return speed == 1.0 ? *c.backward : *c.backward / speed;
    case ActionKind::kBackwardInput: return speed == 1.0 ? *c.backward_input : *c.backward_input / speed;
    case ActionKind::kBackwardWeight: return speed == 1.0 ? *c.backward_weight : *c.backward_weight / speed;
    case ActionKind::kIdle: return 0;
    default: {
      const KindInfo& info = kinds.Info(a.kind);
      auto it = kind_costs.find(info.name);
      double time = it != kind_costs.end() ? it->second : IsUserKind(a.kind) ? info.default_cost : 0.0;
      // Recomputation is F again, unless the model or the kind says otherwise.
      if (it == kind_costs.end() && info.name == kRecomputeKindName && info.default_cost == 0) {
        time = c.recompute ? *c.recompute : *c.forward;
      }
      // Offload and reload move the activations over the host link.
      const bool host_transfer = info.name == kOffloadKindName || info.name == kReloadKindName;
      if (it == kind_costs.end() && host_transfer && std::isfinite(host_bandwidth)) {
        time = c.activation_bytes * std::abs(info.memory_delta_fraction) / host_bandwidth;
      }
      // Communication runs at the link's pace, not the device's.
      const bool communication = a.kind == ActionKind::kSendForward || a.kind == ActionKind::kRecvForward ||
                                 a.kind == ActionKind::kSendBackward || a.kind == ActionKind::kRecvBackward ||
                                 a.kind == ActionKind::kReduceGrad || host_transfer;
      return communication ? time : time / speed;
    }
  }
}

double CostModel::DurationAfterRecompute(RankId r, const Action& a, const KindRegistry& kinds) const {
  const StageCost& c = Stage(a.stage);
  const std::optional<double>* time = nullptr;
  switch (a.kind) {
    case ActionKind::kBackward: time = &c.backward_after_recompute; break;
    case ActionKind::kBackwardInput: time = &c.backward_input_after_recompute; break;
    case ActionKind::kBackwardWeight: time = &c.backward_weight_after_recompute; break;
    default: break;
  }
  if (time == nullptr || !time->has_value()) return Duration(r, a, kinds);
  return **time / cluster.Speed(r);
}

double CostModel::LinkLatency(RankId from, RankId to) const {
  return cluster.SameSite(from, to) ? comm_latency : cluster.cross_site_latency;
}

double CostModel::LinkBandwidth(RankId from, RankId to) const {
  return cluster.SameSite(from, to) ? comm_bandwidth : cluster.cross_site_bandwidth;
}

double CostModel::CommTime(StageId a, StageId b, RankId from, RankId to) const {
  const double bandwidth = LinkBandwidth(from, to);
  return LinkLatency(from, to) + (std::isinf(bandwidth) ? 0.0 : BoundaryBytes(a, b) / bandwidth);
}

bool CostModel::HasFiniteBandwidth() const {
  return std::isfinite(comm_bandwidth) || (cluster.has_sites() && std::isfinite(cluster.cross_site_bandwidth));
}

}  // namespace pw
