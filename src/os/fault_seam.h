// The OS layer's seam for faults a test wants (leveldb's fault-injection
// Env, cut to what pipewright's tests need). A fault set here makes the os/
// call it names fail the way the real system would, with the same errno, so
// everything above os/ takes its real error path — no test-only branches in
// the callers. runtime/fault_injection.h sets them from PIPEWRIGHT_FAULT so
// tests/fault_harness.sh can fill a rank's disk in the middle of a job.
//
// Faults are process-wide and last until ClearFakeFaults(). Thread-safe
// (atomics); setting one while another thread writes affects that thread's
// next call.
#pragma once

namespace pw {

// From now on every AtomicFile::Write in this process fails with ENOSPC
// ("No space left on device"), as on a full disk: the file is abandoned and
// its .tmp removed, and the file it would have replaced stays as it was.
void FakeDiskFull();

// Undoes every fake fault.
void ClearFakeFaults();

// The errno a write must fail with now (0: none). For os/ itself.
int FakedWriteErrno();

}  // namespace pw
