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
};

struct CostModel {
  // One entry applies to every stage; otherwise one entry per stage.
  std::vector<StageCost> stages = {StageCost{}};
  double comm_latency = 0;                                   // per message
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
  // kind_costs or its declaration) costs the stage's F; OFFLOAD and RELOAD
  // follow host_bandwidth when it is finite.
  double Duration(RankId r, const Action& a, const KindRegistry& kinds) const;
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
