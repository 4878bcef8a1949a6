// Cluster: the machines under the ranks, as the cost model sees them.
//
// Real clusters are uneven. A rank on an older or shared device runs every
// computation slower, and the link between two ranks depends on where they
// sit: the same host, the same site, or two datacenters joined by a WAN. A
// Cluster describes both:
//   - a speed per rank: a computation the stage table prices at t takes
//     t / speed on that rank (1: as the table says; 0.667: 1.5x slower).
//     Communication kinds (SEND_*, RECV_*, REDUCE_GRAD) are not scaled;
//   - sites: every rank belongs to one site. A message between two ranks of
//     one site travels on the cost model's link (comm_latency,
//     comm_bandwidth); a message between sites on the cross-site link
//     (cross_site_latency, cross_site_bandwidth).
// An empty Cluster is uniform: every rank at speed 1, all on one site.
//
// In the cost-model JSON (sim/cost_model_json.h) and in `--cluster FILE`:
//   {"rank_speed": [1, 1, 1, 0.667],
//    "sites": [[0, 1, 2, 3], [4, 5, 6, 7]],
//    "cross_site": {"latency": 20, "bandwidth": 125000}}
// On the command line: --rank-speed 1,1,1,0.667 --sites 0-3,4-7
// --cross-site-latency 20 --cross-site-bandwidth 125000.
#pragma once

#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/ids.h"

namespace pw {

struct Cluster {
  std::vector<double> rank_speed;  // empty (all 1), or one per rank, each > 0
  std::vector<int> site_of_rank;   // empty (one site), or one per rank: 0, 1, ...
  double cross_site_latency = 0;   // per message between sites
  double cross_site_bandwidth = std::numeric_limits<double>::infinity();  // bytes per time unit

  bool uniform() const { return rank_speed.empty() && site_of_rank.empty(); }
  bool has_sites() const { return !site_of_rank.empty(); }
  double Speed(RankId r) const { return rank_speed.empty() ? 1.0 : rank_speed[r]; }
  bool SameSite(RankId a, RankId b) const { return site_of_rank.empty() || site_of_rank[a] == site_of_rank[b]; }
  int num_sites() const;

  // InvalidArgument unless the lists are empty or have `num_ranks` entries,
  // speeds are finite and > 0, sites number 0..k-1 without gaps, and the
  // cross-site link is a finite latency >= 0 and a bandwidth > 0. Messages
  // name the field and how to fix it.
  Status Check(int num_ranks) const;

  // "ranks 0-3 | 4-7, cross-site 20 + bytes/125000; rank 3 at speed 0.667",
  // or "uniform".
  std::string Describe() const;
};

// Site lists: one group per site, separated by commas; a group is ranks
// "a" or ranges "a-b" joined by '+'. "0-3,4-7": two sites of four;
// "0+2,1+3": ranks 0 and 2 on one site, 1 and 3 on the other. Returns
// site_of_rank for `num_ranks` ranks (num_ranks <= 0: as many as the groups
// name). InvalidArgument for a rank named twice, missed, or out of range.
Result<std::vector<int>> ParseSiteList(std::string_view spec, int num_ranks);

// "1,1,1,0.667" -> speeds. InvalidArgument for a non-number or a speed <= 0.
Result<std::vector<double>> ParseRankSpeeds(std::string_view spec);

// Sites as lists of ranks, site by site (the JSON form).
std::vector<std::vector<int>> SiteGroups(const std::vector<int>& site_of_rank);

}  // namespace pw
