#include "sim/cost_model_json.h"

#include <cmath>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "core/text.h"

namespace pw {
namespace {

using nlohmann::json;

Result<double> NonNegative(const json& v, const std::string& where) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
    return Status::InvalidArgument(where + " must be a non-negative number, got " + v.dump());
  }
  return v.get<double>();
}

// A non-empty list of non-negative numbers; `what` completes "must be a
// non-empty list, ..." in the error.
Result<std::vector<double>> NonNegativeList(const json& value, const std::string& at, const std::string& what) {
  if (!value.is_array() || value.empty()) return Status::InvalidArgument(at + " must be a non-empty list, " + what);
  std::vector<double> out;
  for (size_t i = 0; i < value.size(); ++i) {
    PW_ASSIGN_OR_RETURN(double v, NonNegative(value[i], at + "[" + std::to_string(i) + "]"));
    out.push_back(v);
  }
  return out;
}

Result<StageCost> ParseStage(const json& j, const std::string& where) {
  if (!j.is_object()) return Status::InvalidArgument(where + " must be an object like {\"F\": 1, \"B\": 2}");
  StageCost c;
  for (const auto& [key, value] : j.items()) {
    const std::string at = where + "." + PrintableText(key);
    PW_ASSIGN_OR_RETURN(double v, NonNegative(value, at));
    if (key == "F") c.forward = v;
    else if (key == "B") c.backward = v;
    else if (key == "I") c.backward_input = v;
    else if (key == "W") c.backward_weight = v;
    else if (key == "RECOMPUTE") c.recompute = v;
    else if (key == "B_after_recompute") c.backward_after_recompute = v;
    else if (key == "I_after_recompute") c.backward_input_after_recompute = v;
    else if (key == "W_after_recompute") c.backward_weight_after_recompute = v;
    else if (key == "activation_bytes") c.activation_bytes = v;
    else if (key == "output_bytes") c.output_bytes = v;
    else if (key == "freed_by_input") c.freed_by_input = v;
    else {
      return Status::InvalidArgument(
          at + " is not a stage cost key; use F, B, I, W, activation_bytes, output_bytes, freed_by_input, "
               "RECOMPUTE, B_after_recompute, I_after_recompute, W_after_recompute");
    }
  }
  return c;
}

Result<std::vector<StageCost>> ParseEntries(const json& value, const std::string& at) {
  if (!value.is_array() || value.empty()) {
    return Status::InvalidArgument(at + " must be a non-empty list of stage costs");
  }
  std::vector<StageCost> out;
  for (size_t i = 0; i < value.size(); ++i) {
    PW_ASSIGN_OR_RETURN(StageCost s, ParseStage(value[i], at + "[" + std::to_string(i) + "]"));
    out.push_back(s);
  }
  return out;
}

json EntriesJson(const std::vector<StageCost>& entries) {
  json out = json::array();
  for (const StageCost& s : entries) {
    json e;
    if (s.forward) e["F"] = *s.forward;
    if (s.backward) e["B"] = *s.backward;
    if (s.backward_input) e["I"] = *s.backward_input;
    if (s.backward_weight) e["W"] = *s.backward_weight;
    if (s.recompute) e["RECOMPUTE"] = *s.recompute;
    if (s.backward_after_recompute) e["B_after_recompute"] = *s.backward_after_recompute;
    if (s.backward_input_after_recompute) e["I_after_recompute"] = *s.backward_input_after_recompute;
    if (s.backward_weight_after_recompute) e["W_after_recompute"] = *s.backward_weight_after_recompute;
    e["activation_bytes"] = s.activation_bytes;
    e["output_bytes"] = s.output_bytes;
    e["freed_by_input"] = s.freed_by_input;
    out.push_back(e);
  }
  return out;
}

// {"rank_speed": [...], "sites": [[0, 1], [2, 3]], "cross_site": {"latency": L, "bandwidth": B}}
Result<Cluster> ParseCluster(const json& j, const std::string& where) {
  if (!j.is_object()) {
    return Status::InvalidArgument(where + " must be an object like {\"rank_speed\": [1, 0.5], \"sites\": "
                                           "[[0], [1]], \"cross_site\": {\"latency\": 20, \"bandwidth\": 1e5}}");
  }
  Cluster c;
  for (const auto& [key, value] : j.items()) {
    const std::string at = where + "." + PrintableText(key);
    if (key == "rank_speed") {
      PW_ASSIGN_OR_RETURN(c.rank_speed, NonNegativeList(value, at, "one speed per rank"));
    } else if (key == "sites") {
      if (!value.is_array() || value.empty()) {
        return Status::InvalidArgument(at + " must be a list of sites, each a list of ranks: [[0, 1], [2, 3]]");
      }
      std::string spec;  // the same check as --sites
      for (size_t g = 0; g < value.size(); ++g) {
        if (!value[g].is_array() || value[g].empty()) {
          return Status::InvalidArgument(at + "[" + std::to_string(g) + "] must be a non-empty list of ranks");
        }
        spec += g ? "," : "";
        for (size_t i = 0; i < value[g].size(); ++i) {
          const json& r = value[g][i];
          if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() > (1 << 20)) {
            return Status::InvalidArgument(at + "[" + std::to_string(g) + "][" + std::to_string(i) +
                                           "] must be a rank (a whole number >= 0), got " + r.dump());
          }
          spec += (i ? "+" : "") + std::to_string(r.get<int64_t>());
        }
      }
      Result<std::vector<int>> sites = ParseSiteList(spec, 0);
      if (!sites.ok()) return sites.status().WithContext(at);
      c.site_of_rank = std::move(*sites);
    } else if (key == "cross_site") {
      if (!value.is_object()) return Status::InvalidArgument(at + " must be an object {\"latency\": L, \"bandwidth\": B}");
      for (const auto& [link_key, v] : value.items()) {
        const std::string link_at = at + "." + PrintableText(link_key);
        if (link_key == "latency") {
          PW_ASSIGN_OR_RETURN(c.cross_site_latency, NonNegative(v, link_at));
        } else if (link_key == "bandwidth") {
          PW_ASSIGN_OR_RETURN(c.cross_site_bandwidth, NonNegative(v, link_at));
        } else {
          return Status::InvalidArgument(link_at + " is not a link key; use latency, bandwidth");
        }
      }
    } else {
      return Status::InvalidArgument(at + " is not a cluster key; use rank_speed, sites, cross_site");
    }
  }
  return c;
}

json ClusterJson(const Cluster& c) {
  json j = json::object();
  if (!c.rank_speed.empty()) j["rank_speed"] = c.rank_speed;
  if (c.has_sites()) {
    j["sites"] = SiteGroups(c.site_of_rank);
    json link;
    link["latency"] = c.cross_site_latency;
    if (std::isfinite(c.cross_site_bandwidth)) link["bandwidth"] = c.cross_site_bandwidth;
    j["cross_site"] = link;
  }
  return j;
}

}  // namespace

Result<Cluster> ParseClusterJson(std::string_view text, std::string_view source_name) {
  const std::string src(source_name);
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument(src + ": not valid JSON");
  return ParseCluster(j, src);
}

Result<Cluster> LoadClusterFile(const std::string& path) {
  Result<std::string> text = ReadTextFile(path);
  if (!text.ok()) return text.status().WithContext("cluster file");
  return ParseClusterJson(*text, path);
}

Result<CostFile> ParseCostFileJson(std::string_view text, std::string_view source_name) {
  const std::string src(source_name);
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument(src + ": not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument(src + ": the cost model must be a JSON object");
  CostFile file;
  CostModel& c = file.costs;
  std::optional<int64_t> n_layers;
  for (const auto& [key, value] : j.items()) {
    const std::string at = src + ": " + PrintableText(key);
    if (key == "stages") {
      PW_ASSIGN_OR_RETURN(c.stages, ParseEntries(value, at));
    } else if (key == "layers") {
      PW_ASSIGN_OR_RETURN(file.layers, ParseEntries(value, at));
    } else if (key == "n_layers") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1) {
        return Status::InvalidArgument(at + " must be a positive whole number (the model's blocks), got " +
                                       value.dump());
      }
      n_layers = value.get<int64_t>();
    } else if (key == "comm_latency") {
      PW_ASSIGN_OR_RETURN(c.comm_latency, NonNegative(value, at));
    } else if (key == "action_overhead") {
      PW_ASSIGN_OR_RETURN(c.action_overhead, NonNegative(value, at));
    } else if (key == "comm_bandwidth") {
      PW_ASSIGN_OR_RETURN(c.comm_bandwidth, NonNegative(value, at));
    } else if (key == "host_bandwidth") {
      PW_ASSIGN_OR_RETURN(c.host_bandwidth, NonNegative(value, at));
    } else if (key == "memory_cap") {
      PW_ASSIGN_OR_RETURN(double cap, NonNegative(value, at));
      c.memory_cap = cap;
    } else if (key == "static_bytes") {
      if (value.is_number()) {
        PW_ASSIGN_OR_RETURN(double v, NonNegative(value, at));
        c.static_bytes = {v};
      } else if (value.is_array()) {
        PW_ASSIGN_OR_RETURN(c.static_bytes, NonNegativeList(value, at, "one per rank"));
      } else {
        return Status::InvalidArgument(at + " must be a number or a non-empty list (one per rank)");
      }
    } else if (key == "kind_costs") {
      if (!value.is_object()) return Status::InvalidArgument(at + " must be an object like {\"SEND_F\": 0.1}");
      for (const auto& [kind, cost] : value.items()) {
        PW_ASSIGN_OR_RETURN(c.kind_costs[kind], NonNegative(cost, at + "." + PrintableText(kind)));
      }
    } else if (key == "cluster") {
      PW_ASSIGN_OR_RETURN(c.cluster, ParseCluster(value, at));
    } else {
      return Status::InvalidArgument(at + " is not a cost model key; use stages, comm_latency, action_overhead, "
                                          "comm_bandwidth, host_bandwidth, static_bytes, memory_cap, kind_costs, cluster, n_layers, layers");
    }
  }
  // The two keys say the same thing twice, so that a truncated or hand-edited
  // table cannot pass for the model.
  if (n_layers.has_value() != !file.layers.empty()) {
    return Status::InvalidArgument(src + ": \"n_layers\" and \"layers\" go together (the model's blocks and "
                                         "one cost entry per block); give both or neither");
  }
  if (n_layers && *n_layers != static_cast<int64_t>(file.layers.size())) {
    return Status::InvalidArgument(src + ": n_layers is " + std::to_string(*n_layers) + " but \"layers\" has " +
                                   std::to_string(file.layers.size()) + " entries; give one entry per layer");
  }
  return file;
}

Result<CostFile> LoadCostFile(const std::string& path) {
  Result<std::string> text = ReadTextFile(path);
  if (!text.ok()) return text.status().WithContext("cost file");
  return ParseCostFileJson(*text, path);
}

Result<CostModel> ParseCostModelJson(std::string_view text, std::string_view source_name) {
  PW_ASSIGN_OR_RETURN(CostFile file, ParseCostFileJson(text, source_name));
  return std::move(file.costs);
}

Result<CostModel> LoadCostModelFile(const std::string& path) {
  PW_ASSIGN_OR_RETURN(CostFile file, LoadCostFile(path));
  return std::move(file.costs);
}

std::string FormatCostModelJson(const CostModel& c) { return FormatCostFileJson(CostFile{c, {}}); }

std::string FormatCostFileJson(const CostFile& file) {
  const CostModel& c = file.costs;
  json j;
  j["stages"] = EntriesJson(c.stages);
  if (!file.layers.empty()) {
    j["n_layers"] = file.layers.size();
    j["layers"] = EntriesJson(file.layers);
  }
  j["comm_latency"] = c.comm_latency;
  if (c.action_overhead > 0) j["action_overhead"] = c.action_overhead;
  if (std::isfinite(c.comm_bandwidth)) j["comm_bandwidth"] = c.comm_bandwidth;
  if (std::isfinite(c.host_bandwidth)) j["host_bandwidth"] = c.host_bandwidth;
  j["static_bytes"] = c.static_bytes;
  if (c.memory_cap) j["memory_cap"] = *c.memory_cap;
  if (!c.kind_costs.empty()) j["kind_costs"] = c.kind_costs;
  if (!c.cluster.uniform()) j["cluster"] = ClusterJson(c.cluster);
  return j.dump(2) + "\n";
}

}  // namespace pw
