// FetchRing: a RemotePool's WaS weight cache. The blocks this rank does not
// own form a ring in layer order; ring block k lives in slot k % slots, is
// fetched from its owner (one request header, one packed reply of
// BlockBytes) `prefetch_depth` blocks ahead of its use, and stays until a
// later block needs the slot. Internal to src/infer (remote_pool.cc).
//
// Thread-safety: the engine's thread only.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "comm/comm_group.h"
#include "core/status.h"
#include "infer/model_weights.h"
#include "infer/weight_pool.h"

namespace pw {

class ProcessGroups;

class FetchRing {
 public:
  // `remote`: the non-owned blocks in layer order. `stats` (the pool's)
  // counts fetches, their bytes and waits; it outlives the ring.
  FetchRing(const PoolOptions& options, const ModelConfig& config, ProcessGroups* groups, int rank, int world,
            std::vector<int> remote, PoolStats* stats);
  // Waits for every receive posted into a slot (they must not outlive it).
  ~FetchRing();
  FetchRing(const FetchRing&) = delete;
  FetchRing& operator=(const FetchRing&) = delete;

  int slots() const { return static_cast<int>(slots_.size()); }
  // Adds up to `count` empty slots, never more than the remote blocks.
  void AddSlots(int count);
  // Frees every slot (call with none in flight: after WaitAll).
  void DropSlots() { slots_.clear(); }

  // Starts the ring over: fetches ring blocks 0..last_k (a pass, or the
  // next one, begins).
  Status Restart(int last_k);
  // The weights of non-owned block `layer`, fetched if needed; prefetches
  // `prefetch_depth` ring blocks beyond it.
  Result<const BlockWeights*> Acquire(int layer);
  // Waits for every fetch in flight (those a pass issued but skipped too).
  Status WaitAll();

 private:
  struct Slot {
    at::Tensor flat;       // BlockBytes(config, blocks_format) bytes
    BlockWeights views;    // UnpackBlock(flat)
    int layer = -1;        // the block it holds or is receiving
    PendingOp receive;     // the block arriving into `flat`
    PendingOp request;     // its request header
    bool in_flight = false;
  };

  std::string Where() const { return "weight pool of rank " + std::to_string(rank_); }
  // Posts the fetch of ring block k into its slot (a no-op when the slot
  // holds it already).
  Status Issue(int k);
  Status IssueUpTo(int last_k);
  Status WaitSlot(Slot& slot);

  const PoolOptions& options_;
  const ModelConfig& config_;
  ProcessGroups* groups_;
  const int rank_, world_;
  const std::vector<int> remote_;  // ring index k -> layer
  std::vector<int> ring_of_;       // layer -> ring index k, or -1 when owned
  PoolStats* stats_;
  std::vector<Slot> slots_;
  int next_issue_ = 0;
};

}  // namespace pw
