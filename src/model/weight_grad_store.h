// WeightGradStore: the weight-gradient work that split backward defers.
//
// With split backward, `I` runs autograd's backward, in which every split
// Linear (model/split_linear.h) computes only dX and, instead of dW/db,
// hands the store a closure that holds what dW/db need (the layer's input and
// output gradient) and adds them into weight.grad / bias.grad when run. `W`
// runs the closures of one microbatch. Deferral is on only inside a
// DeferScope; outside it (fused `B`) the Linear computes dW/db at once.
//
// One store per stage (owned by StageModule); no global state. The header is
// LibTorch-free: closures are type-erased.
//
// Thread-safety: Enqueue may be called from autograd's worker thread while
// the owner waits in backward, so the queue is guarded by a mutex. Everything
// else is called by the stage's owner thread only.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "core/ids.h"

namespace pw {

class WeightGradStore {
 public:
  using Closure = std::function<void()>;

  WeightGradStore() = default;
  WeightGradStore(const WeightGradStore&) = delete;
  WeightGradStore& operator=(const WeightGradStore&) = delete;

  // While alive, weight-gradient work is deferred and queued under
  // `microbatch`. Scopes do not nest (PW_CHECK).
  class DeferScope {
   public:
    DeferScope(WeightGradStore& store, MicrobatchId microbatch);
    ~DeferScope();
    DeferScope(const DeferScope&) = delete;
    DeferScope& operator=(const DeferScope&) = delete;

   private:
    WeightGradStore& store_;
  };

  // The microbatch whose weight-gradient work is being deferred, if any.
  std::optional<MicrobatchId> deferring() const;

  // Queues `closure` under the deferring microbatch. PW_CHECK: deferring().
  void Enqueue(Closure closure);

  // Runs and drops the closures queued for `microbatch`, in queue order;
  // returns how many ran (0 if none are queued). A closure that throws
  // (c10::Error) propagates; the remaining closures of that microbatch are
  // dropped. Blocks while computing.
  int Run(MicrobatchId microbatch);

  // Drops the queued work of `microbatch` without running it.
  void Discard(MicrobatchId microbatch);

  // Closures call NotifyAccumulated(parameter) after adding into that
  // parameter's .grad (the parameter's TensorImpl address: the header stays
  // LibTorch-free); it calls the hook set here, if any, on the same thread.
  // Set by the owner between actions, never while closures run.
  using AccumulatedHook = std::function<void(const void* parameter)>;
  void SetAccumulatedHook(AccumulatedHook hook) { accumulated_hook_ = std::move(hook); }
  void NotifyAccumulated(const void* parameter) const {
    if (accumulated_hook_) accumulated_hook_(parameter);
  }

  bool HasPending(MicrobatchId microbatch) const;
  int PendingClosures(MicrobatchId microbatch) const;
  // Microbatches with queued work, ascending.
  std::vector<MicrobatchId> PendingMicrobatches() const;

 private:
  mutable std::mutex mutex_;
  std::optional<MicrobatchId> deferring_;
  std::map<MicrobatchId, std::vector<Closure>> pending_;
  AccumulatedHook accumulated_hook_;
};

}  // namespace pw
