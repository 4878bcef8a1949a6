// Timeline: the measured per-rank timeline of training steps — one span per
// executed action (kind, stage, microbatch, start, duration) — and its
// rendering as a Chrome/Perfetto trace in the simulated trace's conventions
// (viz/chrome_trace.h): pid 0, one thread lane (tid) per pipeline rank,
// names in the text notation ("2F0", "1RECV_B3"), cat the kind's name, args
// {stage, microbatch, step}.
//
// Clock: every rank takes its first origin right after one barrier over
// the pipeline group before the first recorded step (Executor, when
// ExecutorOptions::record_timeline is set); each step's origin is the
// rank's steady_clock when its step starts, kept as step_origin_us from
// that first origin, and spans are measured from their step's origin. So a
// span sits at step_origin_us + start_us on a time axis the ranks share up
// to the barrier's release skew (tens of microseconds on one host over
// Gloo, more across hosts) plus clock drift between hosts.
//
// Waits: a receive that blocks shows as its RECV action's span; the trace
// also draws it as a "wait" event (cat "wait") when it lasts at least
// MeasuredTraceOptions::wait_threshold_us. An OPT that waited for the
// gradient norm's all-reduce gets a "wait" event over that wait, inside
// its span, under the same threshold.
//
// Thread-safety: a Timeline is written by one thread (the executor's).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "schedule/schedule.h"

namespace pw {

class CommGroup;

struct TimelineSpan {
  ActionKind kind = ActionKind::kForward;
  int stage = 0;
  int microbatch = kNoMicrobatch;  // kNoMicrobatch for stage-wide kinds
  int64_t step = 0;
  double step_origin_us = 0;  // this step's origin, from the rank's first step origin
  double start_us = 0;        // from the step's origin
  double dur_us = 0;
  // A wait for other ranks inside the action (OPT's gradient-norm
  // all-reduce, runtime/executor.h kNormWait): its start from the span's
  // start and its length; 0 when it did not wait.
  double wait_offset_us = 0;
  double wait_us = 0;
};

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts step `step`: later spans are measured from `origin`.
  void BeginStep(int64_t step, Clock::time_point origin);
  // Records action `a` as [start, end) of the current step, with the wait
  // [wait_start, wait_end) inside it when wait_end > wait_start.
  void Add(const Action& a, Clock::time_point start, Clock::time_point end,
           Clock::time_point wait_start = {}, Clock::time_point wait_end = {});
  // Records a span directly (tests, merged timelines).
  void AddSpan(const TimelineSpan& span) { spans_.push_back(span); }

  const std::vector<TimelineSpan>& spans() const { return spans_; }

 private:
  std::vector<TimelineSpan> spans_;
  int64_t step_ = 0;
  bool has_first_ = false;
  Clock::time_point first_origin_{};
  Clock::time_point origin_{};
  double origin_us_ = 0;
};

// Gathers every pipeline rank's spans on every rank (two all-reduces over
// `pipeline`; a null group or a group of one returns {local}). Collective:
// every rank of the group must call it. Result index = pipeline rank.
Result<std::vector<std::vector<TimelineSpan>>> GatherTimelines(CommGroup* pipeline, int rank,
                                                               const Timeline& local);

struct MeasuredTraceOptions {
  std::string title = "pipewright train";  // process name shown by the viewer
  double wait_threshold_us = 10;            // RECV spans at least this long get a "wait" event
};

// The Chrome/Perfetto JSON of all ranks' spans (`ranks[r]` = rank r's spans),
// one X event per span, plus the "wait" events above. Pure.
std::string RenderMeasuredTrace(const Schedule& schedule,
                                const std::vector<std::vector<TimelineSpan>>& ranks,
                                const MeasuredTraceOptions& options = {});

}  // namespace pw
