#include "search/harvest_score.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "core/text.h"
#include "sim/step_fit.h"

namespace pw::search {

Result<SideTaskProfile> ParseSideTaskProfileJson(std::string_view text, std::string_view source_name) {
  const std::string src(source_name);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument(src + ": not valid JSON");
  if (!j.is_object()) {
    return Status::InvalidArgument(src + ": a side-task profile is an object like {\"step\": 20, \"memory_bytes\": 1e8}");
  }
  SideTaskProfile profile;
  bool has_step = false;
  for (const auto& [key, value] : j.items()) {
    const std::string at = src + ": " + PrintableText(key);
    if (!value.is_number() || !std::isfinite(value.get<double>())) {
      return Status::InvalidArgument(at + " must be a number, got " + value.dump());
    }
    const double v = value.get<double>();
    if (key == "step") {
      if (!(v > 0)) return Status::InvalidArgument(at + " must be positive (one task step, in the cost model's unit)");
      profile.step = v;
      has_step = true;
    } else if (key == "memory_bytes") {
      if (v < 0) return Status::InvalidArgument(at + " must be >= 0");
      profile.memory_bytes = v;
    } else if (key == "margin") {
      if (v < 0) return Status::InvalidArgument(at + " must be >= 0 (train's --harvest-step-margin, 1.2 by default)");
      profile.margin = v;
    } else {
      return Status::InvalidArgument(at + " is not a side-task profile key; use step, memory_bytes, margin");
    }
  }
  if (!has_step) return Status::InvalidArgument(src + ": \"step\" is missing (the length of one task step)");
  return profile;
}

Result<SideTaskProfile> LoadSideTaskProfile(const std::string& path) {
  Result<std::string> text = ReadTextFile(path);
  if (!text.ok()) return text.status().WithContext("side-task profile");
  return ParseSideTaskProfileJson(*text, path);
}

BubbleWork SideWork(const SimResult& sim, const SideTaskProfile& task) {
  BubbleWork work;
  for (const RankSimResult& rank : sim.ranks) {
    double held = 0;
    for (const Bubble& b : rank.bubbles) {
      if (b.free_memory && *b.free_memory < task.memory_bytes) continue;
      held += StepsThatFit(b.length(), task.step, task.margin) * task.step;
    }
    work.per_rank.push_back(held);
    work.total += held;
    work.best_rank = std::max(work.best_rank, held);
  }
  return work;
}

}  // namespace pw::search
