// Signals, by name, and to a child's whole process group (the child and
// whatever it started).
#pragma once

#include <sys/types.h>

#include <string>

namespace pw {

// "SIGABRT", "SIGKILL", or "signal 42". Thread-safe.
std::string SignalName(int signal);

// "Aborted", "Killed"; "" for an unknown signal. Thread-safe.
std::string SignalDescription(int signal);

// Sends `signal` to the process group led by `leader` (a child started
// with ChildSetup::kNewProcessGroup); to `leader` alone when the group is
// gone or was never made. Call it only before reaping `leader` (a reaped
// pid may be reused). Never blocks; false when neither could be signalled.
bool SignalProcessGroup(pid_t leader, int signal);

// Sends `signal` to process group `group` only (never to a single process:
// safe after its leader was reaped, when the leader's pid may be reused but
// members it started may still hold the group). False when none is left.
bool SignalProcessGroupOnly(pid_t group, int signal);

}  // namespace pw
