#include "viz/chrome_trace.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "viz/style.h"

namespace pw {
namespace {

using nlohmann::json;

// X events are formatted by hand: building a json value per event costs
// ~3 us, which is a minute for the 17 M actions of p = 1024, m = 8192.
// Metadata, with user-supplied text, still goes through nlohmann::json.

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

// Shortest text that reads back as the same double; JSON has no inf/nan.
void AppendJsonNumber(std::string& out, double v) {
  PW_CHECK(std::isfinite(v), "trace times must be finite");
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  PW_CHECK(ec == std::errc(), "number does not fit");
  out.append(buf, end);
}

void AppendInt(std::string& out, long long v) { out += std::to_string(v); }

// Appends `,"ph":"X",...` for one complete event up to (not including) args.
void AppendCompleteEvent(std::string& out, std::string_view name, std::string_view cat, int tid, double ts,
                         double dur) {
  out += ",\n{\"ph\":\"X\",\"name\":";
  AppendJsonString(out, name);
  out += ",\"cat\":";
  AppendJsonString(out, cat);
  out += ",\"pid\":0,\"tid\":";
  AppendInt(out, tid);
  out += ",\"ts\":";
  AppendJsonNumber(out, ts);
  out += ",\"dur\":";
  AppendJsonNumber(out, dur);
}

}  // namespace

std::string RenderChromeTrace(const Schedule& schedule, const SimResult& result, const TraceOptions& options) {
  viz_internal::CheckSpansMatch(schedule, result);
  PW_CHECK(options.time_unit_us > 0, "TraceOptions::time_unit_us must be positive");
  const double us = options.time_unit_us;
  const int p = schedule.num_ranks();

  std::string out;
  out.reserve(256 + 130 * schedule.NumActions());
  out += "{\"traceEvents\":[\n";
  const std::string process = "pipewright " + (schedule.name.empty() ? std::string("schedule") : schedule.name);
  out += json{{"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"args", {{"name", process}}}}.dump();
  for (int r = 0; r < p; ++r) {
    const std::string thread = "rank " + std::to_string(r);
    out += ",\n" + json{{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", r}, {"args", {{"name", thread}}}}.dump();
    // Keeps ranks in numeric order in the viewers (otherwise by name: 0, 1, 10, 11, ...).
    out += ",\n" + json{{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", 0}, {"tid", r}, {"args", {{"sort_index", r}}}}
                       .dump();
  }
  for (int r = 0; r < p; ++r) {
    const Program& program = schedule.programs[r];
    for (size_t i = 0; i < program.size(); ++i) {
      const Action& a = program[i];
      if (a.kind == ActionKind::kIdle) continue;  // a placeholder, not work
      const ActionSpan& s = result.spans[r][i];
      AppendCompleteEvent(out, schedule.ActionName(a), schedule.kinds.Name(a.kind), r, s.start * us,
                          (s.end - s.start) * us);
      out += ",\"args\":{\"stage\":";
      AppendInt(out, a.stage);
      out += ",\"microbatch\":";
      if (a.microbatch == kNoMicrobatch) out += "null";
      else AppendInt(out, a.microbatch);
      out += "}}";
    }
    if (!options.bubbles) continue;
    for (const Bubble& b : result.ranks[r].bubbles) {
      AppendCompleteEvent(out, "bubble", "bubble", r, b.start * us, b.length() * us);
      out += ",\"args\":{\"memory_used\":";
      AppendJsonNumber(out, b.memory_used);
      out += ",\"free_memory\":";
      if (b.free_memory) AppendJsonNumber(out, *b.free_memory);
      else out += "null";
      out += "}}";
    }
  }
  out += "\n],\"displayTimeUnit\":\"ms\",\"otherData\":";
  out += json{{"schedule", schedule.name},
              {"makespan", result.makespan},
              {"bubble_ratio", result.bubble_ratio},
              {"time_unit_us", us}}
             .dump();
  out += "}\n";
  return out;
}

}  // namespace pw
