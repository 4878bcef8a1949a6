// Test-only fault injection: PIPEWRIGHT_FAULT makes a training rank die at
// a chosen point, so that tests and tests/fault_harness.sh can fail a job at
// a reproducible moment (docs/reliability.md, "Faults"). Unset — always,
// outside tests — nothing happens.
//
//   PIPEWRIGHT_FAULT=kill:rank=1,step=3
//       world rank 1 kills itself (SIGKILL) once it has completed 3 steps
//       (after that step's checkpoint, when one is due)
//   PIPEWRIGHT_FAULT=kill:rank=0,step=2,at=checkpoint
//       ... inside the checkpoint of step 2, once its own stage files are
//       written (other ranks may still be writing theirs)
//   PIPEWRIGHT_FAULT=kill:rank=0,step=2,at=manifest
//       ... inside the checkpoint of step 2, every stage file written, just
//       before world rank 0 commits the manifest
//   PIPEWRIGHT_FAULT=kill-job:...
//       the same points, but the rank kills its parent first (the local
//       launcher; its ranks then die with it): the whole job dies at once,
//       like a power cut
//   PIPEWRIGHT_FAULT=disk-full:rank=1,step=3
//       world rank 1's disk fills up once it has completed 3 steps: every
//       later file write in that rank fails with ENOSPC (os/fault_seam.h),
//       so its next checkpoint fails the way a full disk makes it fail
//
// A fault fires only in a job's first attempt: not when PIPEWRIGHT_RESTART_COUNT
// (set by `train --max-restarts` on a restart) or TORCHELASTIC_RESTART_COUNT
// (set by torchrun) is above 0.
#pragma once

#include <cstdint>
#include <string_view>

#include "comm/world_info.h"
#include "core/status.h"

namespace pw {

// Where a rank may be killed: "step" (after a step), "checkpoint" or
// "manifest" (inside SaveTrainingCheckpoint).
// A kill fault does not return when the fault set in `env` matches (rank,
// step, site); a disk-full fault makes the disk full and returns OK.
// InvalidArgument naming the variable and its format when PIPEWRIGHT_FAULT
// is malformed; OK otherwise. Thread-safe (reads the environment only).
Status MaybeInjectFault(const EnvGetter& env, std::string_view site, int rank, int64_t completed_steps);

}  // namespace pw
