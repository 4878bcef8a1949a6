#include "cli/schedule_options.h"

#include <filesystem>

#include "cli/number_checks.h"
#include "core/units.h"
#include "schedule/generators.h"
#include "sim/cost_model_json.h"

namespace pw::cli {
namespace {

Result<double> SizeOption(const std::string& text, const char* flag) {
  Result<double> v = ParseByteSize(text);
  if (!v.ok()) return v.status().WithContext(flag);
  return v;
}

// --cluster FILE, then the flags over it (over a cost file's cluster).
Status ApplyClusterOptions(const ScheduleOptions& opts, Cluster& cluster) {
  if (!opts.cluster_file.empty()) {
    PW_ASSIGN_OR_RETURN(cluster, LoadClusterFile(opts.cluster_file));
  }
  if (!opts.rank_speed.empty()) {
    Result<std::vector<double>> speeds = ParseRankSpeeds(opts.rank_speed);
    if (!speeds.ok()) return speeds.status().WithContext("--rank-speed");
    cluster.rank_speed = std::move(*speeds);
  }
  if (!opts.sites.empty()) {
    Result<std::vector<int>> sites = ParseSiteList(opts.sites, 0);
    if (!sites.ok()) return sites.status().WithContext("--sites");
    cluster.site_of_rank = std::move(*sites);
  }
  if (opts.cross_site_latency >= 0) cluster.cross_site_latency = opts.cross_site_latency;
  if (!opts.cross_site_bandwidth.empty()) {
    PW_ASSIGN_OR_RETURN(cluster.cross_site_bandwidth, SizeOption(opts.cross_site_bandwidth, "--cross-site-bandwidth"));
  }
  if ((opts.cross_site_latency >= 0 || !opts.cross_site_bandwidth.empty()) && !cluster.has_sites()) {
    return Status::InvalidArgument("--cross-site-latency/--cross-site-bandwidth need sites: give --sites (e.g. "
                                   "--sites 0-3,4-7) or a --cluster file with \"sites\"");
  }
  return Status::Ok();
}

}  // namespace

void AddScheduleOptions(CLI::App& cmd, ScheduleOptions& opts) {
  cmd.add_option("-s,--schedule", opts.schedule,
                 "Built-in family (" + BuiltinScheduleNameList() +
                     ") or a schedule file: .pipe (schedule language), .csv (torch.distributed.pipelining "
                     "compute-only CSV) or pipewright text")
      ->capture_default_str();
  opts.ranks_opt = cmd.add_option("-p,--ranks", opts.ranks, "Pipeline ranks p (built-in families, .pipe files)")
                       ->capture_default_str()
                       ->check(CLI::Range(1, 1 << 20));
  opts.microbatches_opt =
      cmd.add_option("-m,--microbatches", opts.microbatches, "Microbatches m per iteration (built-in families, .pipe files)")
          ->capture_default_str()
          ->check(CLI::Range(1, 1 << 24));
  opts.chunks_opt = cmd.add_option("-v,--chunks", opts.chunks,
                                   "Stages (chunks) per rank for interleaved families; 0 = the family's default")
                        ->capture_default_str()
                        ->check(CLI::Range(0, 1 << 10));
}

void AddCostOptions(CLI::App& cmd, ScheduleOptions& opts) {
  cmd.add_option("-c,--cost", opts.cost,
                 "Uniform time of one action on one virtual stage, e.g. F=1,B=2 or F=1,I=1,W=1 "
                 "(B defaults to I+W; I=W=B/2 when only B is given; default F=1,B=2)");
  cmd.add_option("--cost-file", opts.cost_file,
                 "JSON cost model with a table per stage (see docs/cost-model.md); other cost options "
                 "override its fields")
      ->check(CLI::ExistingFile);
  cmd.add_option("--comm-latency", opts.comm_latency, "Time for a message between ranks")
      ->check(NonNegative());
  cmd.add_option("--action-overhead", opts.action_overhead,
                 "Time a rank spends between two of its actions (the executor's dispatch; a training "
                 "profile measures it): each action starts this much later")
      ->check(NonNegative());
  cmd.add_option("--comm-bandwidth", opts.comm_bandwidth,
                 "Bytes per time unit between ranks (e.g. 10GB); default infinite");
  cmd.add_option("--host-bandwidth", opts.host_bandwidth,
                 "Bytes per time unit between device and host memory (e.g. 25GB): OFFLOAD and RELOAD then "
                 "take the activation bytes they move / this; default: their declared cost");
  cmd.add_option("--activation-bytes", opts.activation_bytes,
                 "Activation memory one microbatch holds on a stage from F to its backward (e.g. 256MiB)");
  cmd.add_option("--output-bytes", opts.output_bytes,
                 "Bytes a stage sends to the next one per microbatch (with --comm-bandwidth)");
  cmd.add_option("--static-bytes", opts.static_bytes, "Static memory per rank: parameters, optimizer state");
  cmd.add_option("--memory-cap", opts.memory_cap, "Memory per rank; the simulator reports violations");
  cmd.add_option("--cluster", opts.cluster_file,
                 "JSON cluster: rank speeds, sites and the cross-site link (e.g. examples/clusters/two-sites.json; "
                 "docs/cost-model.md); the flags below override its fields")
      ->check(CLI::ExistingFile)
      ->group("Cluster");
  cmd.add_option("--rank-speed", opts.rank_speed,
                 "Speed factor per rank, e.g. 1,1,1,0.667 (rank 3 1.5x slower): computations take time / speed")
      ->group("Cluster");
  cmd.add_option("--sites", opts.sites,
                 "Ranks per site, e.g. 0-3,4-7 (two sites) or 0+2,1+3; messages between sites use the cross-site link")
      ->group("Cluster");
  cmd.add_option("--cross-site-latency", opts.cross_site_latency, "Time for a message between sites")
      ->check(NonNegative())
      ->group("Cluster");
  cmd.add_option("--cross-site-bandwidth", opts.cross_site_bandwidth,
                 "Bytes per time unit between sites (e.g. 125KB for 1 Gbit/s in milliseconds); default infinite")
      ->group("Cluster");
}

Result<dsl::ScheduleSource> ToScheduleSource(const ScheduleOptions& opts) {
  auto given = [](const CLI::Option* opt) { return opt != nullptr && opt->count() > 0; };
  dsl::ScheduleSource source;
  source.schedule = opts.schedule;
  source.ranks = opts.ranks;
  source.microbatches = opts.microbatches;
  source.chunks = opts.chunks;
  source.ranks_given = given(opts.ranks_opt);
  source.microbatches_given = given(opts.microbatches_opt);
  source.chunks_given = given(opts.chunks_opt);
  if (!IsBuiltinScheduleFamily(opts.schedule) &&
      std::filesystem::path(opts.schedule).extension() == ".pipe") {
    // The program's `costs` line, if any, is already in them.
    PW_ASSIGN_OR_RETURN(source.pipe_costs, BuildUnresolvedCostModel(opts));
    source.pipe_costs_given = true;
    source.pipe_costs_from_line = opts.cost_file.empty() && opts.cost.empty();
  }
  return source;
}


Result<CostModel> BuildCostModel(const ScheduleOptions& opts, const Schedule& schedule) {
  PW_ASSIGN_OR_RETURN(CostModel costs, BuildUnresolvedCostModel(opts));
  PW_RETURN_IF_ERROR(costs.Resolve(schedule));
  return costs;
}

Result<CostModel> BuildUnresolvedCostModel(const ScheduleOptions& opts) {
  CostModel costs;
  if (!opts.cost_file.empty()) {
    PW_ASSIGN_OR_RETURN(costs, LoadCostModelFile(opts.cost_file));
  } else if (opts.cost.empty() && !IsBuiltinScheduleFamily(opts.schedule) &&
             std::filesystem::path(opts.schedule).extension() == ".pipe" && std::filesystem::exists(opts.schedule)) {
    // A plan's program is compiled and simulated with the costs it was
    // planned with, as its `costs` line says.
    PW_ASSIGN_OR_RETURN(std::optional<CostModel> planned, dsl::LoadPipeCosts(opts.schedule));
    if (planned) costs = std::move(*planned);
  }
  if (!opts.cost.empty()) {
    if (costs.stages.size() != 1) {
      return Status::InvalidArgument("--cost sets uniform costs but --cost-file has a table per stage; use one");
    }
    Status st = costs.ParseUniformCosts(opts.cost);
    if (!st.ok()) return st.WithContext("--cost");
  }
  if (opts.comm_latency > 0) costs.comm_latency = opts.comm_latency;
  if (opts.action_overhead > 0) costs.action_overhead = opts.action_overhead;
  if (!opts.comm_bandwidth.empty()) {
    PW_ASSIGN_OR_RETURN(costs.comm_bandwidth, SizeOption(opts.comm_bandwidth, "--comm-bandwidth"));
  }
  if (!opts.host_bandwidth.empty()) {
    PW_ASSIGN_OR_RETURN(costs.host_bandwidth, SizeOption(opts.host_bandwidth, "--host-bandwidth"));
  }
  auto per_stage = [&](const std::string& text, const char* flag, double StageCost::*field) -> Status {
    if (text.empty()) return Status::Ok();
    PW_ASSIGN_OR_RETURN(double v, SizeOption(text, flag));
    for (StageCost& s : costs.stages) s.*field = v;
    return Status::Ok();
  };
  PW_RETURN_IF_ERROR(per_stage(opts.activation_bytes, "--activation-bytes", &StageCost::activation_bytes));
  PW_RETURN_IF_ERROR(per_stage(opts.output_bytes, "--output-bytes", &StageCost::output_bytes));
  if (!opts.static_bytes.empty()) {
    PW_ASSIGN_OR_RETURN(double v, SizeOption(opts.static_bytes, "--static-bytes"));
    costs.static_bytes = {v};
  }
  if (!opts.memory_cap.empty()) {
    PW_ASSIGN_OR_RETURN(double v, SizeOption(opts.memory_cap, "--memory-cap"));
    costs.memory_cap = v;
  }
  PW_RETURN_IF_ERROR(ApplyClusterOptions(opts, costs.cluster));
  return costs;
}

}  // namespace pw::cli
