// ServingThread: the owner side of the weight pool. One thread per rank that
// answers the other ranks' requests for the blocks this rank owns (protocol:
// infer/pool_protocol.h): a fetch gets the packed block in one message, sent
// straight from the weights' own buffer (PackBlock), a compute
// request gets PreAttention / PostAttention run on the rows it sent (the
// rows of a PreAttention are kept for the client's PostAttention, which may
// ask to forward its output to the next block's owner). The engine thread
// keeps computing meanwhile; the two threads only share the core.
//
// Serving everyone at once: requests from every client are taken in arrival
// order (one recvAnysource posted at a time: Gloo queues the others), and
// replies are sent without waiting for them to complete — a block on its
// way to one client does not hold up the next client's request. At most
// kMaxOutstandingSends sends are in flight; beyond that the oldest is
// waited for (it completes as soon as its client has posted the receive,
// which every client does before it asks).
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
// Traffic split: on serving() engine threads send requests and CaS inputs
// and serving threads send forwarded (chained) CaS requests, each thread on
// its own payload tag; only serving threads receive there. On
// data_parallel() only serving threads send (replies) and only engine
// threads receive. The engine may run
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
#include <deque>
#include <string>
#include <utility>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/comm_group.h"
#include "core/status.h"
#include "infer/model_weights.h"
#include "infer/pool_protocol.h"

namespace pw {

class ProcessGroups;

struct ServedStats {
  int64_t bytes_sent = 0, bytes_received = 0;
  int64_t served_fetches = 0, served_computes = 0;
};

// A request header as the tensor that travels (int64 [kHeaderLen]).
at::Tensor HeaderTensor(const pool_wire::Header& header);

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
  // True once another rank's auto said it committed to CaS (kCasCommitted).
  // Any thread.
  bool PeerCommittedToCas() const;
  // How many other ranks' auto said they committed to WaS (kWasCommitted:
  // they send no CaS request again). Any thread.
  int PeersCommittedToWas() const;

 private:
  struct Shared;
  void Run();
  std::string Who() const;
  // Posts the receive of the next request's header into `header` and
  // waits for it. Returns its sender, -1 when the thread is to stop (Stop,
  // every client done), or the transport's failure (reason kPeerLost).
  // Serving thread only.
  Result<int> NextRequest(const at::Tensor& header);
  // Settles or abandons the sends in flight and records `failure` and the
  // end for the engine's thread. Serving thread only.
  void FinishServing(Status failure);
  Status Handle(const pool_wire::Header& header, int src);
  // A kPreAttention or kPostAttention for its client: its inputs received
  // (or kept), the block computed, the output sent back or forwarded.
  Status Compute(const pool_wire::Header& header, int src, const std::string& where);
  // The rows a compute request works on: received, or for a kPostAttention
  // without kWithX the ones its kPreAttention kept. Adds the bytes received.
  Result<at::Tensor> ComputeInput(const pool_wire::Header& header, int src, const std::string& where,
                                  int64_t& received);
  // Receives the request's [rows, d] payload (`what`, for a message).
  Result<at::Tensor> ReceiveRows(const pool_wire::Header& header, int src, const char* what,
                                 const std::string& where);
  // The block's output to the client, or with kChain forwarded as block
  // layer + 1's kPreAttention to that block's owner.
  Status ReplyOrForward(const pool_wire::Header& header, at::Tensor out, const std::string& where);
  // Keeps `op` (a send whose tensor it holds, made for `client`) in
  // flight; waits for the oldest beyond kMaxOutstandingSends. Serving
  // thread only.
  Status Track(PendingOp op, const std::string& what, int client);
  // Waits for every send made for `client`: called when a compute request
  // for it arrives, by which time the client has received them all (it
  // sends its next request only after its last reply; a chained forward
  // was consumed before the reply it led to). A Gloo send does not report
  // itself complete until waited for (c10d's SendWork keeps isCompleted
  // false), so without this up to kMaxOutstandingSends replies stayed
  // alive: the serving side's memory, beyond the plan's one reply per
  // client. Serving thread only.
  Status SettleSendsFor(int client, const std::string& what);
  void Stop();

  static constexpr size_t kMaxOutstandingSends = 16;

  const ModelWeights& weights_;
  ProcessGroups* groups_;
  int rank_ = 0, world_ = 1;
  std::shared_ptr<Shared> shared_;
  // Serving thread only: sends in flight, and per client the rows of its
  // last PreAttention (layer, x) for the PostAttention that follows.
  struct Outstanding {
    int client;
    PendingOp op;
  };
  std::deque<Outstanding> outstanding_;
  std::vector<std::pair<int64_t, at::Tensor>> kept_x_;
  std::thread thread_;
};

}  // namespace pw
