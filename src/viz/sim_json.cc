#include "viz/sim_json.h"

#include <algorithm>

#include "viz/style.h"

namespace pw {

nlohmann::json SimResultToJson(const Schedule& schedule, const SimResult& result, const CostModel& costs) {
  viz_internal::CheckRanksMatch(schedule, result);
  using nlohmann::json;
  json ranks = json::array();
  for (size_t r = 0; r < result.ranks.size(); ++r) {
    const RankSimResult& rank = result.ranks[r];
    json bubbles = json::array();
    json bubble_memory = json::array();
    for (const Bubble& b : rank.bubbles) {
      bubbles.push_back({b.start, b.end});
      bubble_memory.push_back({{"start", b.start},
                               {"end", b.end},
                               {"memory_used", b.memory_used},
                               {"free_memory", b.free_memory ? json(*b.free_memory) : json(nullptr)}});
    }
    ranks.push_back({{"rank", r},
                     {"busy", rank.busy},
                     {"idle", std::max(0.0, result.makespan - rank.busy)},
                     {"peak_memory", rank.peak_memory},
                     {"memory_cap_violated", rank.memory_cap_violated},
                     {"bubbles", std::move(bubbles)},
                     {"bubble_memory", std::move(bubble_memory)}});
  }
  return json{{"schedule", schedule.name},
              {"placement", schedule.placement.Describe()},
              {"num_ranks", schedule.num_ranks()},
              {"num_stages", schedule.num_stages()},
              {"num_microbatches", schedule.num_microbatches},
              {"num_actions", schedule.NumActions()},
              {"makespan", result.makespan},
              {"bubble_ratio", result.bubble_ratio},
              {"memory_cap", costs.memory_cap ? json(*costs.memory_cap) : json(nullptr)},
              {"memory_cap_violated", result.memory_cap_violated},
              {"ranks", std::move(ranks)}};
}

}  // namespace pw
