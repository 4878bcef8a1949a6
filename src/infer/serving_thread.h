// ServingThread: the owner side of the weight pool. One thread per rank that
// answers the other ranks' requests for the blocks this rank owns (protocol:
// infer/pool_protocol.h): a fetch gets the packed block in one message, sent
// straight from the weights' own buffer (PackedBlockView), a compute
// request gets PreAttention / PostAttention run on the rows it sent. The
// engine thread keeps computing meanwhile; the two threads only share the
// core.
//
// Thread-safety finding (LibTorch 1.13, ProcessGroupGloo.cpp + Gloo's tcp
// transport), which the traffic split below relies on:
//   * send / recv / recvAnysource do not go through the group's work queue:
//     they build a Gloo UnboundBuffer on contexts_[tag % n] (a vector only
//     read after construction) and post it to the transport, whose Context
//     and Pair guard their state with their own mutexes. Point-to-point
//     calls from two threads on one group are therefore safe.
//   * Collectives are NOT: each takes nextTag() = collectiveCounter_++ on a
//     plain uint32_t (a data race from two threads) and every member must
//     issue them in the same order. So no collective may run on a group
//     while another thread of this process uses it for collectives.
//   * A Gloo wait that times out calls context->signalException(), which
//     closes every pair of the group: a timeout is fatal for the group. The
//     serving thread therefore waits for requests without a deadline and is
//     woken by RecvWork::abort() (UnboundBuffer::abortWaitRecv, thread-safe)
//     when it must stop early; the bound on hangs lives in the engine thread
//     (WaitUntilAllDone's inactivity timeout, the group timeout on replies).
// Traffic split: on serving() only engine threads send (requests, CaS
// inputs) and only serving threads receive; on data_parallel() only serving
// threads send (replies) and only engine threads receive. The engine may run
// its own collectives on data_parallel()/world(): the serving thread never
// runs a collective, and point-to-point slots cannot collide with a
// collective's (Gloo prefixes collective slots).
//
// Failure: a bad request or a transport error stops the thread; error()
// returns it (naming this rank, the peer and the block).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"
#include "infer/model_weights.h"

namespace pw {

class ProcessGroups;

struct ServedStats {
  int64_t bytes_sent = 0, bytes_received = 0;
  int64_t served_fetches = 0, served_computes = 0;
};

// `block` as PackBlock's flat tensor of BlockParamCount(config) floats:
// a view, without copying, when the fields already lie packed in one buffer
// in PackBlock order (LoadModelWeights stores them so); else PackBlock.
at::Tensor PackedBlockView(const BlockWeights& block, const ModelConfig& config);

class ServingThread {
 public:
  // Starts serving the blocks of `weights` that this rank owns. `weights`
  // and `groups` (with a serving group, pp = 1) must outlive the object.
  // Does not block.
  ServingThread(const ModelWeights& weights, ProcessGroups* groups);
  // Stops the thread (aborting a pending wait) and joins it.
  ~ServingThread();
  ServingThread(const ServingThread&) = delete;
  ServingThread& operator=(const ServingThread&) = delete;

  // Blocks until every other rank has sent its Done, the thread failed, or
  // no request arrived for `idle_timeout`; in the last case the thread is
  // stopped and IoError names the ranks that have not finished. Engine
  // thread only.
  Status WaitUntilAllDone(std::chrono::milliseconds idle_timeout);
  // The thread's failure, or OK while it is healthy. Any thread.
  Status error() const;
  ServedStats stats() const;

 private:
  struct Shared;
  void Run();
  Status Handle(const std::vector<int64_t>& header, int src);
  void Stop();

  const ModelWeights& weights_;
  ProcessGroups* groups_;
  int rank_ = 0, world_ = 1;
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace pw
