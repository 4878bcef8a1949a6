// CostModel: what the simulator charges for each action, and the memory it
// tracks. Times are in arbitrary units (the CLI treats them as given); bytes
// are bytes.
//
// A cost is the time of one action on one virtual stage: with v chunks per
// rank a rank's share of a microbatch is v such actions.
#pragma once

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "schedule/schedule.h"
#include "sim/cluster.h"

namespace pw {

// Costs of one virtual stage. Unset times are resolved by CostModel::Resolve:
// B = I + W when only I and W are given; I = W = B / 2 when only B is given;
// F = 1 and B = 2 when nothing is given.
struct StageCost {
  std::optional<double> forward, backward, backward_input, backward_weight;
  double activation_bytes = 0;      // held from F until the backward frees it
  // Share of activation_bytes that I frees; W frees the rest.
  double freed_by_input = 0.5;
  double output_bytes = 0;          // bytes sent to the next stage per F (and back per B/I)
  // Where the stage recomputes a microbatch's activations (DROP after F,
  // RECOMPUTE before the backward): the RECOMPUTE's time, and the time of
  // that microbatch's backward, which reads activations just recomputed and
  // may run faster than one reading them long after F (a runtime profile of
  // a recomputing run measures both). Unset: RECOMPUTE takes F, the
  // backward takes its time above. The after-recompute B, I and W resolve
  // among themselves like B, I and W when any is given.
  std::optional<double> recompute;
  std::optional<double> backward_after_recompute, backward_input_after_recompute, backward_weight_after_recompute;

  // Whether any after-recompute backward time is given.
  bool HasBackwardAfterRecompute() const {
    return backward_after_recompute || backward_input_after_recompute || backward_weight_after_recompute;
  }
};

struct CostModel {
  // One entry applies to every stage; otherwise one entry per stage.
  std::vector<StageCost> stages = {StageCost{}};
  double comm_latency = 0;                                   // per message
  // Time a rank spends between two of its actions (the executor's dispatch
  // and bookkeeping, runtime/action_overheads.h measures it): each action
  // starts this long after it could have, and the time counts as idle.
  // Schedules with more actions (split backward: I and W for every B) pay
  // it more often.
  double action_overhead = 0;
  double comm_bandwidth = std::numeric_limits<double>::infinity();  // bytes per time unit
  // Parameters, gradients, optimizer state: one entry for all ranks, or one per rank.
  std::vector<double> static_bytes = {0};
  std::optional<double> memory_cap;                          // bytes per rank
  // Time of user kinds and communication kinds by name (e.g. "OFFLOAD",
  // "SEND_F"); communication actions cost 0 by default (they are asynchronous,
  // the transfer time is charged to the waiter as comm_latency + bytes/bandwidth).
  std::map<std::string, double> kind_costs;
  // The device <-> host memory link, bytes per time unit: OFFLOAD and
  // RELOAD (schedule/kind_registry.h) without a kind_costs entry take the
  // bytes they move (the stage's activation bytes x their memory fraction)
  // / this, whatever their declaration's cost. Infinite (the default): the
  // declaration's cost.
  double host_bandwidth = std::numeric_limits<double>::infinity();
  // Uneven ranks and links (sim/cluster.h); empty: uniform.
  Cluster cluster;

  // Parses "F=1,B=2", "F=1,I=1,W=1", "F=1,B=2,SEND_F=0.1"... into this model's
  // uniform stage costs (or kind_costs for other names). Errors name the bad item.
  Status ParseUniformCosts(std::string_view spec);

  // Fills unset times by the rules above and checks the model against
  // `schedule` (one entry or one per stage / rank, non-negative numbers).
  // Call once before simulating.
  Status Resolve(const Schedule& schedule);

  // After Resolve: the time of action `a` on rank `r`: the stage table's
  // time divided by r's speed for computations, as given for communication.
  // RECOMPUTE (schedule/kind_registry.h) without a cost of its own (in
  // kind_costs or its declaration) costs the stage's `recompute` time, or
  // else its F; OFFLOAD and RELOAD follow host_bandwidth when it is finite.
  double Duration(RankId r, const Action& a, const KindRegistry& kinds) const;
  // After Resolve: as Duration, for a B, I or W whose microbatch the stage
  // recomputed: the stage's after-recompute time when it has one. Other
  // kinds: Duration.
  double DurationAfterRecompute(RankId r, const Action& a, const KindRegistry& kinds) const;
  // After Resolve: time for the activation (or its gradient) on the boundary
  // between adjacent stages `a` and `b` to go from rank `from` to rank `to`
  // on an idle link: the link's latency + bytes / its bandwidth.
  double CommTime(StageId a, StageId b, RankId from, RankId to) const;
  // The link between two ranks: the cost model's within a site, the
  // cluster's cross-site link between sites.
  double LinkLatency(RankId from, RankId to) const;
  double LinkBandwidth(RankId from, RankId to) const;
  // Bytes on the boundary between adjacent stages a and b.
  double BoundaryBytes(StageId a, StageId b) const { return Stage(std::min(a, b)).output_bytes; }
  // Whether some link has a finite bandwidth (messages then occupy links).
  bool HasFiniteBandwidth() const;
  const StageCost& Stage(StageId s) const { return stages.size() == 1 ? stages[0] : stages[s]; }
  double StaticBytes(RankId r) const { return static_bytes.size() == 1 ? static_bytes[0] : static_bytes[r]; }
};

}  // namespace pw
