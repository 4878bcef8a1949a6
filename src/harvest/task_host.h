// The side-task host: the body of the process that runs one iterative side
// task for a training rank (`pipewright side-task host ...` or the
// pw_side_task_host tool), and the messages it exchanges with the rank's
// TaskProcess over a SOCK_SEQPACKET socketpair.
//
//   rank -> host   RESUME{budget_us, sent_ns}  PAUSE{seq, sent_ns}  STOP
//   host -> rank   READY (after Setup and two calibration steps), RESUMED,
//                  PAUSED{seq, at_ns} (as soon as the current step ended),
//                  PROGRESS (every ~20 ms while running), FAILED{why},
//                  FINISHED, EXITING (final counts before a clean exit)
//
// Times are CLOCK_MONOTONIC nanoseconds, shared by both processes on one
// machine, so the rank measures pause latency (PAUSE sent -> step ended)
// and budgets from its own send time without clock skew.
//
// While RUNNING the host starts a step only if the budget's remaining time
// exceeds margin x the step time (an EWMA of measured steps); a budget <= 0
// is unbounded. The host never blocks the rank: the rank sends with
// MSG_DONTWAIT, and the host drops progress messages when the rank is slow
// to read them (counts are cumulative, so none is lost).
//
// Failures: Setup/Step errors, exceptions, and allocation failures under
// the RLIMIT_AS limit ("out of memory: limit N bytes") are sent as FAILED
// and the host exits non-zero. An allocation failure is told by its type:
// std::bad_alloc (the host makes LibTorch's CPU allocator throw it),
// c10::OutOfMemoryError, or OpenCV's StsNoMem. It exits 0 after STOP (Finish() run) or when the
// rank's end of the socket closes.
//
// Thread-safety: RunSideTaskHost runs on the host process's main thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "harvest/side_task.h"

namespace pw {

enum class HostMessageType : uint32_t {
  kResume = 1,
  kPause = 2,
  kStop = 3,
  kReady = 10,
  kResumed = 11,
  kPaused = 12,
  kProgress = 13,
  kFailed = 14,
  kFinished = 15,
  kExiting = 16,
};

// Why a host failed, sent with FAILED and also its exit code: the rank
// tells an out-of-memory failure by this value, not by the text's wording.
enum class HostFailure : uint32_t {
  kNone = 0,
  kSetup = 2,        // bad spec, or Setup failed
  kStep = 3,         // a step, Finish or an exception
  kOutOfMemory = 4,  // std::bad_alloc, or a library's allocation failure, under RLIMIT_AS
};

// One datagram; plain data so both sides agree byte for byte.
struct HostMessage {
  HostMessageType type = HostMessageType::kProgress;
  uint32_t seq = 0;          // PAUSE / PAUSED: which pause this acknowledges
  HostFailure failure = HostFailure::kNone;  // FAILED: what kind
  int64_t time_ns = 0;       // sender's CLOCK_MONOTONIC at send (PAUSED: when the step ended)
  int64_t echo_ns = 0;       // PAUSED: the time_ns of the PAUSE it acknowledges
  double budget_us = 0;      // RESUME
  int64_t steps = 0;         // host -> rank: cumulative progress (runs: whole steps and parts of one)
  int64_t partial_steps = 0; // of those, runs of part of a step (SideTask::StepPart)
  double work = 0;
  double run_seconds = 0;    // time spent inside Step()
  double step_us = 0;        // EWMA of a whole step's CPU time
  char text[256] = {};       // READY: unit; FAILED: the reason
};

int64_t MonotonicNs();
void SetMessageText(HostMessage& m, const std::string& text);

struct SideTaskHostArgs {
  std::string spec;         // FormatSideTaskSpec text
  int control_fd = 3;
  double margin = 1.2;
};

// The argv after the program name, identical for the pipewright binary and
// the pw_side_task_host tool: side-task host --spec TEXT --control-fd N --margin X
std::vector<std::string> SideTaskHostArgv(const SideTaskHostArgs& args);
// Parses that argv (without the program name). InvalidArgument on anything else.
Result<SideTaskHostArgs> ParseSideTaskHostArgv(const std::vector<std::string>& argv);

// Runs the host until STOP, the rank's socket closing, the task finishing
// and being stopped, or a failure. Returns the process exit code (0 clean,
// 2 bad spec / Setup failed, 3 Step failed, 4 out of memory).
int RunSideTaskHost(const SideTaskHostArgs& args);

}  // namespace pw
