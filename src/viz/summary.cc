#include "viz/summary.h"

#include <algorithm>
#include <vector>

#include "core/units.h"
#include "viz/style.h"

namespace pw {
namespace {

using viz_internal::FormatNumber;

// "1 rank", "2 ranks", "1 microbatch", "2 microbatches".
std::string Counted(size_t n, std::string_view noun) {
  std::string s = std::to_string(n) + " " + std::string(noun);
  if (n != 1) s += noun.back() == 'h' ? "es" : "s";
  return s;
}

double IdleShare(const RankSimResult& rank, double makespan) {
  return makespan > 0 ? std::max(0.0, 1 - rank.busy / makespan) : 0.0;
}

// Right-aligns each column of `rows` (the first row is the header).
std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) out += "  ";
      out.append(width[c] - row[c].size(), ' ');
      out += row[c];
    }
    out += '\n';
  }
  return out;
}

}  // namespace

std::string RenderSimSummary(const Schedule& schedule, const SimResult& result, const CostModel& costs) {
  viz_internal::CheckRanksMatch(schedule, result);
  std::string out = schedule.name.empty() ? std::string("schedule") : schedule.name;
  out += ": " + Counted(schedule.num_ranks(), "rank") + ", " + Counted(schedule.num_stages(), "stage") + " (" +
         schedule.placement.Describe() + "), " + Counted(schedule.num_microbatches, "microbatch") + ", " +
         Counted(schedule.NumActions(), "action") + "\n";
  if (!costs.cluster.uniform()) out += "cluster: " + costs.cluster.Describe() + "\n";
  out += "makespan " + FormatNumber(result.makespan) + ", bubble ratio " +
         viz_internal::FormatPercent(result.bubble_ratio) + '\n';
  if (costs.memory_cap) {
    out += "memory cap " + FormatBytes(*costs.memory_cap) + " per rank: ";
    std::string over;
    for (size_t r = 0; r < result.ranks.size(); ++r) {
      if (result.ranks[r].memory_cap_violated) over += (over.empty() ? "" : ", ") + std::to_string(r);
    }
    out += over.empty() ? "respected\n" : "EXCEEDED on rank " + over + '\n';
  }
  std::vector<std::vector<std::string>> rows = {{"rank", "busy", "idle %", "peak memory", "bubbles"}};
  for (size_t r = 0; r < result.ranks.size(); ++r) {
    const RankSimResult& rank = result.ranks[r];
    std::string peak = FormatBytes(rank.peak_memory);
    if (rank.memory_cap_violated) peak += " (over cap)";
    rows.push_back({std::to_string(r), FormatNumber(rank.busy),
                    viz_internal::FormatPercent(IdleShare(rank, result.makespan)), peak,
                    std::to_string(rank.bubbles.size())});
  }
  return out + Table(rows);
}

}  // namespace pw
