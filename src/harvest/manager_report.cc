// The harvest reports as text: a rank's report as JSON (HarvestRankReport::
// ToJson, handed from worker ranks to rank 0) and the job's summary lines
// (FormatHarvestSummary). Declared in harvest/manager.h.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "harvest/manager.h"

namespace pw {

std::string HarvestRankReport::ToJson() const {
  nlohmann::json j;
  j["world_rank"] = world_rank;
  j["pp_rank"] = pp_rank;
  j["core"] = core;
  j["policy"] = HarvestPolicyName(policy);
  j["bubble_seconds"] = bubble_seconds;
  j["bubble_seconds_ready"] = bubble_seconds_ready;
  j["bubble_seconds_allowed"] = bubble_seconds_allowed;
  j["idle_edges"] = idle_edges;
  j["resumes"] = resumes;
  j["ready_step"] = ready_step;
  j["predicted_idle_per_step_ms"] = predicted_idle_per_step_ms;
  j["predicted_step_ms"] = predicted_step_ms;
  if (free_memory_bytes) j["free_memory_bytes"] = *free_memory_bytes;
  j["side_task_seconds"] = side_task_seconds;
  j["side_task_cpu_seconds"] = side_task_cpu_seconds;
  j["steps"] = steps;
  j["pauses"] = pauses;
  j["pause_latency_mean_us"] = pause_latency_mean_us;
  j["pause_latency_max_us"] = pause_latency_max_us;
  j["failures"] = failures;
  if (paired) {
    j["paired"] = {{"block_steps", paired->block_steps},   {"from_step", paired_from_step},
                   {"first_step", paired->first_step},     {"pairs", paired->pairs},
                   {"slowdown", paired->slowdown},         {"ci95_low", paired->ci95_low},
                   {"ci95_high", paired->ci95_high},       {"held_step_ms", paired->held_step_ms},
                   {"allowed_step_ms", paired->allowed_step_ms}};
  }
  nlohmann::json tasks = nlohmann::json::array();
  for (const HarvestTaskReport& t : this->tasks) {
    const TaskProcessReport& p = t.process;
    nlohmann::json tj;
    tj["name"] = t.name;
    tj["state"] = SideTaskStateName(p.state);
    tj["steps"] = p.steps;
    tj["partial_steps"] = p.partial_steps;
    tj["work"] = p.work;
    tj["unit"] = p.unit;
    tj["run_seconds"] = p.run_seconds;
    tj["cpu_seconds"] = t.cpu_seconds;
    tj["setup_cpu_seconds"] = t.setup_cpu_seconds;
    tj["pauses"] = p.pauses;
    tj["pause_latency_mean_us"] = p.pause_latency_mean_us;
    tj["pause_latency_max_us"] = p.pause_latency_max_us;
    tj["memory_limit_bytes"] = t.memory_limit_bytes;
    tj["forced_pauses"] = p.forced_pauses;
    tj["stalled_pauses"] = p.stalled_pauses;
    tj["output_bytes"] = p.output_bytes;
    tj["output_lines_held_back"] = p.output_lines_held_back;
    if (p.processes_max > 0) {
      tj["processes_max"] = p.processes_max;
      tj["private_max_bytes"] = p.private_max_bytes;
    }
    if (!p.failure.empty()) tj["failure"] = p.failure;
    if (!t.start_failure.empty()) tj["failure"] = t.start_failure;
    tasks.push_back(tj);
  }
  j["tasks"] = tasks;
  return j.dump();
}

namespace {

// "harvest rank 1 side task image misbehaved: its step ran through 12 pauses
// without ending (each enforced with SIGSTOP); 3.2 MiB of output (80211
// lines held back by the rate limit)": what was contained, or "" for a task
// that behaved.
std::string MisbehaviourLine(int rank, const nlohmann::json& task) {
  std::string what;
  const long long stalled = task.value("stalled_pauses", int64_t{0});
  const long long held_back = task.value("output_lines_held_back", int64_t{0});
  if (stalled > 0) {
    what += "its step ran through " + std::to_string(stalled) + " pauses without ending (each enforced with SIGSTOP)";
  }
  if (held_back > 0) {
    char text[160];
    std::snprintf(text, sizeof(text), "%s%s of output (%lld lines held back by the rate limit)", what.empty() ? "" : "; ",
                  FormatBytes(task.value("output_bytes", 0.0)).c_str(), held_back);
    what += text;
  }
  if (what.empty()) return "";
  return "harvest rank " + std::to_string(rank) + " side task " + task.value("name", "") + " misbehaved: " + what + "\n";
}

// "harvest: in-run slowdown on rank 1: +0.42% (95% CI -0.31% .. +1.15%, 12
// pairs of 2 x 4 steps; ...)": the paired figure of one rank's report.
std::string PairedLine(const nlohmann::json& j, bool noise_floor) {
  const nlohmann::json& p = j["paired"];
  char line[512];
  const int k = p.value("block_steps", 0);
  const long long pairs = p.value("pairs", int64_t{0});
  const int rank = j.value("world_rank", 0);
  const char* what = noise_floor ? "in-run noise floor (no side task ran)" : "in-run slowdown";
  if (pairs == 0) {
    const long long from = p.value("from_step", int64_t{-1});
    const std::string since = from < 0 ? "(harvesting never started)" : "from step " + std::to_string(from);
    std::snprintf(line, sizeof(line), "harvest: %s on rank %d: no complete pair of 2 x %d steps %s; run more steps\n",
                  what, rank, k, since.c_str());
    return line;
  }
  std::snprintf(line, sizeof(line),
                "harvest: %s on rank %d: %+.2f%% (95%% CI %+.2f%% .. %+.2f%%, %lld pairs of 2 x %d steps "
                "from step %lld; step %.2f ms held, %.2f ms allowed)\n",
                what, rank, 100 * p.value("slowdown", 0.0), 100 * p.value("ci95_low", 0.0),
                100 * p.value("ci95_high", 0.0), pairs, k, static_cast<long long>(p.value("first_step", int64_t{-1})),
                p.value("held_step_ms", 0.0), p.value("allowed_step_ms", 0.0));
  return line;
}

}  // namespace

std::string FormatHarvestSummary(const std::vector<std::string>& reports,
                                 const std::vector<double>& step_seconds, int profile_steps) {
  std::string out, paired;
  char line[512];
  double hosted_bubble = 0, cpu_total = 0;
  nlohmann::json first;  // the first report (rank 0's): its paired figure when no rank hosts a task
  for (const std::string& text : reports) {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object()) continue;
    if (first.is_null()) first = j;
    if (j.contains("paired") && !j["tasks"].empty()) paired += PairedLine(j, false);
    std::string work;
    for (const auto& t : j["tasks"]) {
      std::snprintf(line, sizeof(line), "%s%s %lld steps %.4g %s", work.empty() ? "" : ", ",
                    t.value("name", "").c_str(), static_cast<long long>(t.value("steps", int64_t{0})),
                    t.value("work", 0.0), t.value("unit", "").c_str());
      work += line;
    }
    std::snprintf(line, sizeof(line),
                  "harvest rank %d (%s, core %d): bubbles %.2f s (predicted %.1f of %.1f ms per step); "
                  "side tasks ran %.2f s, cpu %.2f s%s%s; %lld pauses, latency mean %.0f us max %.0f us\n",
                  j.value("world_rank", 0), j.value("policy", "").c_str(), j.value("core", -1),
                  j.value("bubble_seconds", 0.0), j.value("predicted_idle_per_step_ms", 0.0),
                  j.value("predicted_step_ms", 0.0), j.value("side_task_seconds", 0.0),
                  j.value("side_task_cpu_seconds", 0.0), work.empty() ? "" : ": ", work.c_str(),
                  static_cast<long long>(j.value("pauses", int64_t{0})),
                  j.value("pause_latency_mean_us", 0.0), j.value("pause_latency_max_us", 0.0));
    out += line;
    if (!j["tasks"].empty()) {
      hosted_bubble += j.value("bubble_seconds", 0.0);
      cpu_total += j.value("side_task_cpu_seconds", 0.0);
    }
    for (const auto& t : j["tasks"]) out += MisbehaviourLine(j.value("world_rank", 0), t);
    for (const auto& f : j["failures"]) {
      out += "harvest rank " + std::to_string(j.value("world_rank", 0)) + " side task failed: " +
             f.get<std::string>() + "\n";
    }
  }
  // What the bubbles bought: CPU time the side tasks got, against the idle
  // time of the ranks that hosted them. (The slowdown needs a run without
  // side tasks: --harvest-policy none, as bench/harvest_bench.sh does.)
  // Side tasks start once the first profile_steps steps are timed: the
  // training time they could share is the rest.
  double train_s = 0;
  for (size_t i = static_cast<size_t>(std::max(profile_steps, 0)); i < step_seconds.size(); ++i) train_s += step_seconds[i];
  if (hosted_bubble > 0 || cpu_total > 0) {
    std::snprintf(line, sizeof(line),
                  "harvest: side tasks got %.2f s of CPU in %.2f s of bubbles on their ranks (%.0f%%), "
                  "during %.2f s of training steps after the %d profiled\n",
                  cpu_total, hosted_bubble, hosted_bubble > 0 ? 100 * cpu_total / hosted_bubble : 0.0, train_s,
                  profile_steps);
    out += line;
  }
  if (paired.empty() && first.is_object() && first.contains("paired")) paired = PairedLine(first, true);
  out += paired;
  return out;
}

}  // namespace pw
