// RenderChromeTrace: a simulated schedule in the Trace Event Format that
// ui.perfetto.dev and chrome://tracing load — one thread per rank, one
// complete ("X") event per action, bubbles as events of their own category.
//
//   {"traceEvents":[
//     {"ph":"M","name":"process_name","pid":0,"args":{"name":"pipewright 1f1b"}},
//     {"ph":"M","name":"thread_name","pid":0,"tid":1,"args":{"name":"rank 1"}},
//     {"ph":"X","name":"2F0","cat":"F","pid":0,"tid":1,"ts":3000,"dur":1000,
//      "args":{"stage":2,"microbatch":0}},
//     {"ph":"X","name":"bubble","cat":"bubble","pid":0,"tid":1,...}, ...],
//    "displayTimeUnit":"ms","otherData":{"makespan":...,"bubble_ratio":...}}
#pragma once

#include <string>

#include "schedule/schedule.h"
#include "sim/simulator.h"

namespace pw {

struct TraceOptions {
  // Microseconds per cost-model time unit: 1000 shows one unit as 1 ms.
  double time_unit_us = 1000;
  bool bubbles = true;   // add the idle intervals, category "bubble"
};

// Returns the JSON document. Every action except IDLE placeholders gets one
// X event (zero-length ones too, with dur 0); names are the text notation
// ("2F0", "0REDUCE_GRAD"), cat the kind's name, args {stage, microbatch}
// (microbatch null for stage-wide kinds). Bubble args hold the memory in use
// and, with a cap, the free memory. Memory is O(output), about 130 bytes per
// action. Pure. `result` must come from Simulate(schedule, ...) with
// record_spans, and time_unit_us must be positive (PW_CHECK).
std::string RenderChromeTrace(const Schedule& schedule, const SimResult& result, const TraceOptions& options = {});

}  // namespace pw
