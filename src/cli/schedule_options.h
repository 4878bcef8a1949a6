// Options shared by the `pipewright schedule ...` subcommands: which
// schedule (built-in family or file), its shape, and the cost model; and the
// functions that translate them for dsl/schedule_source.h (which loads the
// schedule) and into a resolved CostModel.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "core/status.h"
#include "dsl/schedule_source.h"
#include "schedule/schedule.h"
#include "sim/cost_model.h"

namespace pw::cli {

struct ScheduleOptions {
  std::string schedule = "1f1b";   // family name, or a .pipe / .csv / pipewright text file
  int ranks = 4;
  int microbatches = 8;
  int chunks = 0;                   // 0: the family's default
  std::string cost;                 // "F=1,B=2"
  std::string cost_file;            // JSON cost model
  double comm_latency = 0;
  double action_overhead = 0;
  std::string comm_bandwidth;       // bytes per time unit, with units
  std::string host_bandwidth;       // device <-> host, bytes per time unit, with units
  std::string activation_bytes;     // per stage, with units
  std::string output_bytes;         // per stage, with units
  std::string static_bytes;         // per rank, with units
  std::string memory_cap;           // per rank, with units
  // The cluster (sim/cluster.h): a JSON file, then flags over it.
  std::string cluster_file;
  std::string rank_speed;           // "1,1,1,0.667"
  std::string sites;                // "0-3,4-7"
  double cross_site_latency = -1;   // < 0: not given
  std::string cross_site_bandwidth; // bytes per time unit, with units
  // Set by AddScheduleOptions so that loading can tell given from default.
  CLI::Option* ranks_opt = nullptr;
  CLI::Option* microbatches_opt = nullptr;
  CLI::Option* chunks_opt = nullptr;
};

// Registers --schedule, --ranks, --microbatches, --chunks on `cmd`.
void AddScheduleOptions(CLI::App& cmd, ScheduleOptions& opts);
// Registers the cost options (--cost, --cost-file, --comm-latency, ...).
void AddCostOptions(CLI::App& cmd, ScheduleOptions& opts);

// The options as a dsl::ScheduleSource: a shape value counts as given when
// its option was on the command line; a .pipe file gets the cost options as
// its list scheduler's costs (errors: BuildUnresolvedCostModel's).
Result<dsl::ScheduleSource> ToScheduleSource(const ScheduleOptions& opts);

// Builds the cost model from --cost-file (for a .pipe program whose
// `costs` line names a file, and neither --cost-file nor --cost given: that
// file), then applies the other cost options on top, and resolves it
// against `schedule`.
Result<CostModel> BuildCostModel(const ScheduleOptions& opts, const Schedule& schedule);

// The same cost model before it meets a schedule (not resolved).
Result<CostModel> BuildUnresolvedCostModel(const ScheduleOptions& opts);

}  // namespace pw::cli
