#include "sim/cluster.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/text.h"

namespace pw {
namespace {

Result<int> ParseRank(std::string_view text, std::string_view spec) {
  int v = -1;
  text = TrimSpaces(text);
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || v < 0) {
    return Status::InvalidArgument("site list '" + std::string(spec) + "': '" + std::string(text) +
                                   "' is not a rank; write groups like 0-3,4-7 (ranges) or 0+2,1+3");
  }
  return v;
}

std::vector<std::string_view> SplitOn(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  while (true) {
    const size_t at = text.find(sep);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text = text.substr(at + 1);
  }
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// "0-3" for consecutive ranks, "0+2+5" otherwise.
std::string DescribeGroup(const std::vector<int>& ranks) {
  const bool consecutive = ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size());
  if (consecutive && ranks.size() > 1) return std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? "+" : "") + std::to_string(ranks[i]);
  return text;
}

}  // namespace

int Cluster::num_sites() const {
  return site_of_rank.empty() ? 1 : *std::max_element(site_of_rank.begin(), site_of_rank.end()) + 1;
}

Status Cluster::Check(int num_ranks) const {
  const std::string p = std::to_string(num_ranks);
  if (!rank_speed.empty() && rank_speed.size() != static_cast<size_t>(num_ranks)) {
    return Status::InvalidArgument("rank_speed has " + std::to_string(rank_speed.size()) +
                                   " entries but the schedule has " + p + " ranks; give one speed per rank");
  }
  for (size_t r = 0; r < rank_speed.size(); ++r) {
    if (!std::isfinite(rank_speed[r]) || rank_speed[r] <= 0) {
      return Status::InvalidArgument("rank_speed of rank " + std::to_string(r) + " is " + Number(rank_speed[r]) +
                                     "; a speed is a positive factor (1 = the stage table's times, 0.5 = twice "
                                     "as slow)");
    }
  }
  if (!site_of_rank.empty()) {
    if (site_of_rank.size() != static_cast<size_t>(num_ranks)) {
      return Status::InvalidArgument("the sites name " + std::to_string(site_of_rank.size()) +
                                     " ranks but the schedule has " + p + "; every rank belongs to one site");
    }
    std::vector<char> used(site_of_rank.size(), 0);
    for (int s : site_of_rank) {
      if (s < 0 || s >= num_ranks) return Status::InvalidArgument("site numbers must be 0.." + p + "-1");
      used[s] = 1;
    }
    const int k = num_sites();
    if (std::find(used.begin(), used.begin() + k, 0) != used.begin() + k) {
      return Status::InvalidArgument("site numbers must run 0, 1, ... without gaps");
    }
  }
  if (!std::isfinite(cross_site_latency) || cross_site_latency < 0) {
    return Status::InvalidArgument("cross-site latency must be a finite non-negative time");
  }
  if (!(cross_site_bandwidth > 0)) return Status::InvalidArgument("cross-site bandwidth must be positive");
  return Status::Ok();
}

std::string Cluster::Describe() const {
  if (uniform()) return "uniform";
  std::string text;
  if (has_sites()) {
    std::vector<std::vector<int>> groups = SiteGroups(site_of_rank);
    text = "sites ";
    for (size_t i = 0; i < groups.size(); ++i) text += (i ? " | " : "") + DescribeGroup(groups[i]);
    text += ", cross-site " + Number(cross_site_latency) +
            (std::isinf(cross_site_bandwidth) ? std::string() : " + bytes/" + Number(cross_site_bandwidth));
  }
  std::string slow;
  for (size_t r = 0; r < rank_speed.size(); ++r) {
    if (rank_speed[r] == 1.0) continue;
    slow += (slow.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " at speed " +
            Number(rank_speed[r]);
  }
  if (!slow.empty()) text += (text.empty() ? "" : "; ") + slow;
  return text.empty() ? "uniform" : text;
}

Result<std::vector<int>> ParseSiteList(std::string_view spec, int num_ranks) {
  std::vector<int> site_of;
  std::vector<std::string_view> groups = SplitOn(spec, ',');
  for (size_t g = 0; g < groups.size(); ++g) {
    for (std::string_view item : SplitOn(groups[g], '+')) {
      const size_t dash = item.find('-');
      PW_ASSIGN_OR_RETURN(int first, ParseRank(item.substr(0, dash), spec));
      int last = first;
      if (dash != std::string_view::npos) {
        PW_ASSIGN_OR_RETURN(last, ParseRank(item.substr(dash + 1), spec));
      }
      if (last < first) {
        return Status::InvalidArgument("site list '" + std::string(spec) + "': range '" +
                                       std::string(TrimSpaces(item)) + "' runs backwards");
      }
      if (num_ranks > 0 && last >= num_ranks) {
        return Status::InvalidArgument("site list '" + std::string(spec) + "' names rank " + std::to_string(last) +
                                       " but there are " + std::to_string(num_ranks) + " ranks (0.." +
                                       std::to_string(num_ranks - 1) + ")");
      }
      if (static_cast<size_t>(last) >= site_of.size()) site_of.resize(last + 1, -1);
      for (int r = first; r <= last; ++r) {
        if (site_of[r] >= 0) {
          return Status::InvalidArgument("site list '" + std::string(spec) + "' names rank " + std::to_string(r) +
                                         " twice; every rank belongs to one site");
        }
        site_of[r] = static_cast<int>(g);
      }
    }
  }
  if (num_ranks > 0) site_of.resize(num_ranks, -1);
  for (size_t r = 0; r < site_of.size(); ++r) {
    if (site_of[r] < 0) {
      return Status::InvalidArgument("site list '" + std::string(spec) + "' leaves rank " + std::to_string(r) +
                                     " out; every rank belongs to one site");
    }
  }
  return site_of;
}

Result<std::vector<double>> ParseRankSpeeds(std::string_view spec) {
  std::vector<double> speeds;
  for (std::string_view item : SplitOn(spec, ',')) {
    item = TrimSpaces(item);
    double v = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || !std::isfinite(v) || v <= 0) {
      return Status::InvalidArgument("rank speed '" + std::string(item) + "' in '" + std::string(spec) +
                                     "' is not a positive number; write one factor per rank, e.g. 1,1,1,0.667");
    }
    speeds.push_back(v);
  }
  return speeds;
}

std::vector<std::vector<int>> SiteGroups(const std::vector<int>& site_of_rank) {
  int k = 0;
  for (int s : site_of_rank) k = std::max(k, s + 1);
  std::vector<std::vector<int>> groups(k);
  for (size_t r = 0; r < site_of_rank.size(); ++r) groups[site_of_rank[r]].push_back(static_cast<int>(r));
  return groups;
}

}  // namespace pw
