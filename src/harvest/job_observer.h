// A training job's side tasks as the rank observer the training session
// runs: --side-task SPEC, --side-task-cmd "CMD[@rank=N]",
// --harvest-policy, --harvest-step-margin and --harvest-paired K (the
// in-run paired slowdown; alone, without a task, it measures the run's
// noise floor) of a TrainJob turned into HarvestManager hooks
// (harvest/manager.h). Checked here, before any rank starts.
//
// Thread-safety: pure; the hooks it returns may be called from any thread.
#pragma once

#include "core/status.h"
#include "job/train_job.h"
#include "runtime/rank_observer.h"

namespace pw {

// Empty hooks when the job has no side task, no policy and no --harvest-paired. Errors
// (InvalidArgument) name the flag and value: a bad spec, a bad @rank=, a
// rank outside pp x dp, a negative step margin, an unknown policy.
Result<TrainObserverHooks> HarvestHooksFor(const TrainJob& job);

}  // namespace pw
