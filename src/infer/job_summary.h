// The summary of an inference job from its ranks' summaries (one JSON
// object per rank, as RunInferRank builds them): totals, the slowest rank's
// time, the per-rank minimum of KV capacity, bytes moved per token, and the
// rank summaries themselves; and the one-line text form that the job prints.
//
// Thread-safety: pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pw {

// `ranks` sorted by rank. `wall_s`: the job's wall time.
nlohmann::json JobSummary(const std::vector<nlohmann::json>& ranks, int64_t budget_bytes, double wall_s);

// "summary: mode was, 11 requests (0 already done, 0 failed), ... memory
// accounting exact" and, when predicted, the cost model's crossover line.
std::string FormatJobSummary(const nlohmann::json& summary);

}  // namespace pw
