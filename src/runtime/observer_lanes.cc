#include "runtime/observer_lanes.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace pw {

Timeline ObserverLane(const std::vector<RankObserver::LaneEvent>& events,
                      const std::map<int64_t, std::chrono::steady_clock::time_point>& step_origins,
                      std::vector<std::string>* names) {
  Timeline lane;
  const auto first_origin = step_origins.empty() ? Timeline::Clock::time_point{} : step_origins.begin()->second;
  for (const RankObserver::LaneEvent& e : events) {
    auto owner = step_origins.end();
    for (auto o = step_origins.begin(); o != step_origins.end() && o->second <= e.start; ++o) owner = o;
    if (owner == step_origins.end()) continue;
    auto name = std::find(names->begin(), names->end(), e.name);
    if (name == names->end()) name = names->insert(names->end(), e.name);
    TimelineSpan span;
    span.kind = ActionKind::kIdle;
    span.stage = static_cast<int>(name - names->begin());
    span.step = owner->first;
    span.step_origin_us = std::chrono::duration<double, std::micro>(owner->second - first_origin).count();
    span.start_us = std::chrono::duration<double, std::micro>(e.start - owner->second).count();
    span.dur_us = std::chrono::duration<double, std::micro>(e.end - e.start).count();
    lane.AddSpan(span);
  }
  return lane;
}

// The trace with each rank's observer lane ("rank N side tasks", below the
// rank's own lane) added. `lanes[r]`: rank r's events as spans of its steps
// (stage = index into names[r]).
std::string AddObserverLanes(const std::string& trace, const std::vector<std::vector<TimelineSpan>>& ranks,
                             const std::vector<std::vector<TimelineSpan>>& lanes,
                             const std::vector<std::vector<std::string>>& names) {
  nlohmann::json j = nlohmann::json::parse(trace, nullptr, false);
  if (!j.is_object() || !j.contains("traceEvents")) return trace;
  auto& events = j["traceEvents"];
  const int n = static_cast<int>(ranks.size());
  for (auto& e : events) {  // rank r's lane sorts at 2r, its side lane at 2r + 1
    if (e.value("ph", "") == "M" && e.value("name", "") == "thread_sort_index") {
      e["args"]["sort_index"] = 2 * e.value("tid", 0);
    }
  }
  for (int r = 0; r < static_cast<int>(lanes.size()) && r < n; ++r) {
    if (lanes[r].empty()) continue;
    const int tid = n + r;
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", tid},
                      {"args", {{"name", "rank " + std::to_string(r) + " side tasks"}}}});
    events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", 0}, {"tid", tid},
                      {"args", {{"sort_index", 2 * r + 1}}}});
    for (const TimelineSpan& s : lanes[r]) {
      const std::string name = s.stage >= 0 && s.stage < static_cast<int>(names[r].size())
                                   ? names[r][s.stage] : "side task";
      events.push_back({{"ph", "X"}, {"name", name}, {"cat", "side_task"}, {"pid", 0}, {"tid", tid},
                        {"ts", s.step_origin_us + s.start_us}, {"dur", s.dur_us},
                        {"args", {{"step", s.step}, {"state", "RUNNING"}}}});
    }
  }
  return j.dump() + "\n";
}

}  // namespace pw
