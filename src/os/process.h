// This process itself: its id, replacing its image, ending it (and its
// parent) at once, and how it treats SIGPIPE and interrupts.
//
// Thread-safety: ProcessId, WhyNotExecutable and the kill functions are
// safe anywhere; ReplaceProcessImage and the signal settings belong on the
// main thread before others start (or, for the interrupt handler, around a
// command's own work).
#pragma once

#include <optional>
#include <string>

#include "core/status.h"

namespace pw {

int ProcessId();

// Why this process may not execute `path` (access X_OK: the system's
// reason), or nullopt when it may.
std::optional<std::string> WhyNotExecutable(const std::string& path);

// Replaces this process with `path` run with `argv` (null-terminated; the
// environment is kept). Returns only when that fails, with errno's value.
int ReplaceProcessImage(const std::string& path, char** argv);

// SIGKILL to this process's parent, then to itself: a fault injected to
// take a whole job down without a word (the launcher must notice).
[[noreturn]] void KillParentAndSelf();
// SIGKILL to this process only.
[[noreturn]] void KillSelf();

// Writes to a closed pipe or socket fail with EPIPE instead of killing the
// process (libraries such as Gloo write without MSG_NOSIGNAL).
void IgnoreBrokenPipes();

// How a child process ended, as waitid reports it: si_code (CLD_EXITED,
// CLD_KILLED, CLD_DUMPED) and si_status (the exit code or the signal).
struct ChildEnd {
  int code = 0;
  int value = 0;
};
// Whether child `pid` has ended, leaving it unreaped (waitid WNOWAIT, so
// its pid — and its process group — stay reserved): nullopt while it runs.
// `block`: wait for it to end.
std::optional<ChildEnd> PeekChildEnd(int pid, bool block);
// Reaps child `pid` (waitpid), waiting for it to end.
void ReapChild(int pid);

// Writes StatusRecordLine(status) (core/status_record.h) and a newline to
// stderr in one write when kStatusRecordEnv is "1" in this process's
// environment (the launcher sets it); else does nothing. Async-signal-unsafe
// (allocates): call it on the way out of main or of a failing thread.
void WriteStatusRecordIfAsked(const Status& status);

// Calls `handler` (async-signal-safe) on SIGINT and SIGTERM; Default puts
// both back to their defaults.
void HandleInterrupts(void (*handler)(int));
void DefaultInterrupts();

}  // namespace pw
