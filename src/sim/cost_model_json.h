// The cost model as JSON: the format that `--cost-file` reads, that the
// training runtime's `--profile-out` writes (measured costs), and that the
// planner reads. Example:
//
//   { "stages": [ {"F": 1.0, "I": 1.1, "W": 0.9, "activation_bytes": 2e8,
//                  "output_bytes": 4e6, "freed_by_input": 0.5}, ... ],
//     "comm_latency": 0.01, "comm_bandwidth": 1e10,
//     "static_bytes": [1e9, ...], "memory_cap": 8e9,
//     "kind_costs": {"SEND_F": 0.0, "OFFLOAD": 0.3} }
//
// "stages" holds one entry (all stages) or one per stage; a stage entry may
// give "B" instead of (or with) "I" and "W". Unknown keys are errors, so a
// typo never silently falls back to a default.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "sim/cost_model.h"

namespace pw {

// Parses the JSON text above. `source_name` (a path) prefixes error messages.
Result<CostModel> ParseCostModelJson(std::string_view text, std::string_view source_name);

// Reads and parses a cost file.
Result<CostModel> LoadCostModelFile(const std::string& path);

// The JSON text of `costs` (unset times are omitted). Round-trips through
// ParseCostModelJson.
std::string FormatCostModelJson(const CostModel& costs);

}  // namespace pw
