// The training step a plan predicts: the planner ranks schedules by the
// makespan of their compute actions, but `train` runs the schedule lowered
// — sends and receives between ranks, the gradient sync and the optimizer
// step at the end of every rank's program. With a profile from `train
// --profile-out`, the cost model carries the executor's measured costs of
// those actions (runtime/action_overheads.h: SEND_*, RECV_*, REDUCE_GRAD,
// OPT and the link latency), so simulating the lowered schedule predicts
// the step `train` will measure, not only its compute part.
//
// Thread-safety: pure.
#pragma once

#include "core/status.h"
#include "schedule/schedule.h"
#include "sim/cost_model.h"

namespace pw::search {

// Lowers `compute` as `train` does (LowerForTraining) and returns the
// simulated makespan under `costs` (its memory cap ignored: this is about
// time). Kinds the cost model does not price cost nothing.
// InvalidArgument/FailedPrecondition from lowering (e.g. a forward-only
// schedule has no gradient sync) or from the simulator.
Result<double> PredictTrainingStep(const Schedule& compute, const CostModel& costs);

}  // namespace pw::search
