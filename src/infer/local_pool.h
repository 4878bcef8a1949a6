// The replicate pool: every block is held locally, so both weight-bearing
// parts of a block run here (infer/layer_math.h) and nothing moves. The
// baseline mode, and the single-process pool; CreateWeightPool returns it
// for PoolMode::kReplicate.
//
// Thread-safety: one thread. Failure: InvalidArgument for a block this
// ModelWeights does not hold (a caller bug that the message names).
#pragma once

#include <memory>

#include "infer/model_weights.h"
#include "infer/weight_pool.h"

namespace pw {

// A pool over `weights` (not owned; must outlive the pool and hold every
// block). BeginPass/EndPass do nothing; HeldBytes is the bytes of all
// blocks; Finish returns OK at once (there is no one to serve). `name`
// starts its error messages (the shared pool runs its mapped blocks
// through one too).
std::unique_ptr<WeightPool> MakeLocalPool(const ModelWeights& weights, const char* name = "replicate");

}  // namespace pw
