#include "runtime/timeline.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "comm/comm_group.h"
#include "core/check.h"

namespace pw {
namespace {

// kind, stage, microbatch, step, step_origin_us, start_us, dur_us, wait_offset_us, wait_us
constexpr int kFields = 9;

double Micros(Timeline::Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

void AppendNumber(std::string& out, double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  PW_CHECK(ec == std::errc(), "number does not fit");
  out.append(buf, end);
}

void AppendEvent(std::string& out, const std::string& name, std::string_view cat, int tid, double ts,
                 double dur, const TimelineSpan& s) {
  // Action names and kind names are [0-9A-Z_]+ (KindRegistry checks user kinds): no escaping.
  out += ",\n{\"ph\":\"X\",\"name\":\"";
  out += name;
  out += "\",\"cat\":\"";
  out += cat;
  out += "\"";
  out += ",\"pid\":0,\"tid\":" + std::to_string(tid) + ",\"ts\":";
  AppendNumber(out, ts);
  out += ",\"dur\":";
  AppendNumber(out, dur);
  out += ",\"args\":{\"stage\":" + std::to_string(s.stage) + ",\"microbatch\":";
  out += s.microbatch == kNoMicrobatch ? std::string("null") : std::to_string(s.microbatch);
  out += ",\"step\":" + std::to_string(s.step) + "}}";
}

}  // namespace

void Timeline::BeginStep(int64_t step, Clock::time_point origin) {
  if (!has_first_) {
    has_first_ = true;
    first_origin_ = origin;
  }
  step_ = step;
  origin_ = origin;
  origin_us_ = Micros(origin - first_origin_);
}

void Timeline::Add(const Action& a, Clock::time_point start, Clock::time_point end,
                   Clock::time_point wait_start, Clock::time_point wait_end) {
  TimelineSpan s;
  s.kind = a.kind;
  s.stage = a.stage;
  s.microbatch = a.microbatch;
  s.step = step_;
  s.step_origin_us = origin_us_;
  s.start_us = Micros(start - origin_);
  s.dur_us = Micros(end - start);
  if (wait_end > wait_start) {
    s.wait_offset_us = Micros(wait_start - start);
    s.wait_us = Micros(wait_end - wait_start);
  }
  spans_.push_back(s);
}

Result<std::vector<std::vector<TimelineSpan>>> GatherTimelines(CommGroup* pipeline, int rank,
                                                               const Timeline& local) {
  if (pipeline == nullptr || pipeline->size() <= 1) return std::vector<std::vector<TimelineSpan>>{local.spans()};
  const int ranks = pipeline->size();
  // Counts, then the spans, each by a sum over disjoint slots.
  at::Tensor counts = at::zeros({ranks}, at::kDouble);
  counts[rank] = static_cast<double>(local.spans().size());
  PW_RETURN_IF_ERROR(pipeline->AllReduce({counts}, ReduceKind::kSum).Wait());
  const int64_t max_count = static_cast<int64_t>(counts.max().item<double>());
  at::Tensor data = at::zeros({ranks, std::max<int64_t>(max_count, 1), kFields}, at::kDouble);
  {
    auto acc = data.accessor<double, 3>();
    for (size_t i = 0; i < local.spans().size(); ++i) {
      const TimelineSpan& s = local.spans()[i];
      const double row[kFields] = {static_cast<double>(s.kind), static_cast<double>(s.stage),
                                   static_cast<double>(s.microbatch), static_cast<double>(s.step),
                                   s.step_origin_us, s.start_us, s.dur_us, s.wait_offset_us, s.wait_us};
      for (int f = 0; f < kFields; ++f) acc[rank][static_cast<int64_t>(i)][f] = row[f];
    }
  }
  PW_RETURN_IF_ERROR(pipeline->AllReduce({data}, ReduceKind::kSum).Wait());
  std::vector<std::vector<TimelineSpan>> all(ranks);
  auto acc = data.accessor<double, 3>();
  for (int r = 0; r < ranks; ++r) {
    const int64_t n = static_cast<int64_t>(counts[r].item<double>());
    for (int64_t i = 0; i < n; ++i) {
      TimelineSpan s;
      s.kind = static_cast<ActionKind>(static_cast<int>(acc[r][i][0]));
      s.stage = static_cast<int>(acc[r][i][1]);
      s.microbatch = static_cast<int>(acc[r][i][2]);
      s.step = static_cast<int64_t>(acc[r][i][3]);
      s.step_origin_us = acc[r][i][4];
      s.start_us = acc[r][i][5];
      s.dur_us = acc[r][i][6];
      s.wait_offset_us = acc[r][i][7];
      s.wait_us = acc[r][i][8];
      all[r].push_back(s);
    }
  }
  return all;
}

std::string RenderMeasuredTrace(const Schedule& schedule,
                                const std::vector<std::vector<TimelineSpan>>& ranks,
                                const MeasuredTraceOptions& options) {
  using nlohmann::json;
  std::string out = "{\"traceEvents\":[\n";
  out += json{{"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"args", {{"name", options.title}}}}.dump();
  for (size_t r = 0; r < ranks.size(); ++r) {
    const int tid = static_cast<int>(r);
    out += ",\n" + json{{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", tid},
                        {"args", {{"name", "rank " + std::to_string(r)}}}}.dump();
    out += ",\n" + json{{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", 0}, {"tid", tid},
                        {"args", {{"sort_index", tid}}}}.dump();
  }
  size_t actions = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (const TimelineSpan& s : ranks[r]) {
      const double ts = s.step_origin_us + s.start_us;  // the shared axis (see "Clock")
      const Action a{s.stage, s.microbatch, s.kind};
      const std::string name = schedule.kinds.Contains(s.kind) ? schedule.ActionName(a) : "?";
      const std::string_view cat = schedule.kinds.Contains(s.kind) ? schedule.kinds.Name(s.kind) : "?";
      AppendEvent(out, name, cat, static_cast<int>(r), ts, s.dur_us, s);
      ++actions;
      const bool recv = s.kind == ActionKind::kRecvForward || s.kind == ActionKind::kRecvBackward;
      if (recv && s.dur_us >= options.wait_threshold_us) {
        AppendEvent(out, "wait", "wait", static_cast<int>(r), ts, s.dur_us, s);
      } else if (!recv && s.wait_us > 0 && s.wait_us >= options.wait_threshold_us) {
        AppendEvent(out, "wait", "wait", static_cast<int>(r), ts + s.wait_offset_us, s.wait_us, s);
      }
    }
  }
  out += "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"measured\":true,\"ranks\":" +
         std::to_string(ranks.size()) + ",\"actions\":" + std::to_string(actions) +
         ",\"clock\":\"steady_clock from one pipeline barrier; each rank places its own steps\"}}\n";
  return out;
}

}  // namespace pw
