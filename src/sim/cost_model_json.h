// The cost model as JSON: the format that `--cost-file` reads, that the
// training runtime's `--profile-out` writes (measured costs), and that the
// planner reads. Example:
//
//   { "stages": [ {"F": 1.0, "I": 1.1, "W": 0.9, "activation_bytes": 2e8,
//                  "output_bytes": 4e6, "freed_by_input": 0.5}, ... ],
//     "comm_latency": 0.01, "comm_bandwidth": 1e10,
//     "static_bytes": [1e9, ...], "memory_cap": 8e9,
//     "kind_costs": {"SEND_F": 0.0, "OFFLOAD": 0.3},
//     "cluster": {"rank_speed": [1, 1, 1, 0.667], "sites": [[0, 1], [2, 3]],
//                 "cross_site": {"latency": 20, "bandwidth": 125000}} }
//
// "stages" holds one entry (all stages) or one per stage; a stage entry may
// give "B" instead of (or with) "I" and "W". A profile of a run that
// recomputes also gives "RECOMPUTE" and the backward of a recomputed
// microbatch ("B_after_recompute", "I_after_recompute",
// "W_after_recompute"; StageCost). Unknown keys are errors, so a typo never
// silently falls back to a default.
//
// A training profile (`train --profile-out`) also describes the model:
// "n_layers": L and "layers": L entries in the stage format, the cost of
// each model block, the first carrying the embedding and the last the LM
// head. The simulator charges stages and ignores them; `plan` reads them to
// choose stage boundaries between the model's blocks (docs/cost-model.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sim/cost_model.h"

namespace pw {

// A cost file: the cost model and, when the file has them, the model's
// per-layer costs.
struct CostFile {
  CostModel costs;
  std::vector<StageCost> layers;  // "layers"; empty when the file has none
};

// Parses the JSON text above. `source_name` (a path) prefixes error
// messages. InvalidArgument for bad JSON, an unknown key, a bad value, and
// "n_layers" and "layers" given one without the other or disagreeing.
Result<CostFile> ParseCostFileJson(std::string_view text, std::string_view source_name);

// Reads and parses a cost file.
Result<CostFile> LoadCostFile(const std::string& path);

// As ParseCostFileJson, keeping the cost model only (what a simulation needs).
Result<CostModel> ParseCostModelJson(std::string_view text, std::string_view source_name);
Result<CostModel> LoadCostModelFile(const std::string& path);

// The JSON text of `file` (unset times are omitted; "n_layers" and
// "layers" only when there are layers). Round-trips through ParseCostFileJson.
std::string FormatCostFileJson(const CostFile& file);

// A cluster on its own (`--cluster FILE`): the object of the "cluster" key
// above (sim/cluster.h). InvalidArgument for bad JSON, an unknown key or a
// bad value; the sizes are checked against a schedule by CostModel::Resolve.
Result<Cluster> ParseClusterJson(std::string_view text, std::string_view source_name);
Result<Cluster> LoadClusterFile(const std::string& path);
std::string FormatCostModelJson(const CostModel& costs);

}  // namespace pw
