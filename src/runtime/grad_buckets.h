// GradBuckets: one stage's data-parallel gradient average, in buckets that
// start while the stage's last backward is still running — DDP's overlap of
// communication with the rest of the backward.
//
// The parameters are grouped in reverse order (the order a backward
// finishes them: the head first) into buckets of about `bucket_bytes`.
// During the stage's last gradient action the executor reports each
// parameter as it takes its last contribution (MarkReady, from
// StageModule::SetGradAccumulatedCallback); a bucket whose parameters are
// all final starts its all-reduce at once, but only after every bucket
// before it has started — so every replica issues the same collectives in
// the same order, whatever the order the parameters finished in.
// LaunchRest (REDUCE_GRAD) starts what remains: parameters finished by an
// earlier action (LayerNorm and embedding gradients are final after the
// last I, before the last W) and any without a gradient (zeros, so every
// replica reduces the same list). Wait (the rank's first OPT) finishes
// them: the gradients hold the average afterwards.
//
// Thread-safety: MarkReady may run on the thread that computes the
// backward; the state is guarded. Launch order is the call order, so
// collectives stay deterministic only when one thread drives a step (the
// executor's, on CPU). Failure: Wait returns the first failed collective.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <mutex>
#include <vector>

#include "comm/comm_group.h"
#include "core/status.h"

namespace pw {

class GradBuckets {
 public:
  static constexpr size_t kDefaultBucketBytes = size_t{4} << 20;

  // `params`: the stage's parameters (StageModule::Parameters order);
  // `group`: the data-parallel group (not owned, size > 1).
  GradBuckets(std::vector<at::Tensor> params, CommGroup* group, size_t bucket_bytes = kDefaultBucketBytes);

  // Forgets the last step: no parameter is final, no bucket started.
  void BeginStep();
  // Parameter `index` is final for this step; starts every complete bucket
  // next in line. Indexes out of range are ignored.
  void MarkReady(size_t index);
  // Starts every bucket not started yet (REDUCE_GRAD).
  void LaunchRest();
  // Blocks until every started bucket is reduced; OK when none started.
  Status Wait();

 private:
  struct Bucket {
    std::vector<size_t> members;  // indexes into params_
    size_t remaining = 0;         // members not final yet this step
  };
  void LaunchReadyLocked();
  void LaunchLocked(Bucket& bucket);

  std::vector<at::Tensor> params_;
  CommGroup* group_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // per parameter
  std::vector<char> ready_;        // per parameter, this step
  size_t next_ = 0;                // the next bucket to start
  std::vector<PendingOp> started_;
  std::mutex mutex_;
};

}  // namespace pw
