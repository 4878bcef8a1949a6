#include "infer/serving_thread.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <algorithm>
#include <deque>
#include <string>
#include <utility>

#include "comm/process_groups.h"
#include "infer/layer_math.h"
#include "infer/pool_protocol.h"

namespace pw {

at::Tensor HeaderTensor(const pool_wire::Header& header) {
  const std::array<int64_t, pool_wire::kHeaderLen> fields = header.Encode();
  return at::tensor(at::ArrayRef<int64_t>(fields.data(), fields.size()), at::kLong);
}

namespace wire = pool_wire;
using Clock = std::chrono::steady_clock;

// "Forever" for the request wait: long enough never to fire (a Gloo timeout
// would close the group), short enough not to overflow the clock.
constexpr std::chrono::milliseconds kWaitForever = std::chrono::hours(24 * 365);

struct ServingThread::Shared {
  mutable std::mutex mu;
  std::condition_variable cv;
  bool stop = false;       // the engine asked the thread to stop
  bool running = true;     // false once Run() returned
  Status error;
  std::vector<bool> done;  // per rank: sent its Done
  int done_count = 0;
  bool peer_committed_to_cas = false;  // a kCasCommitted arrived
  std::vector<bool> committed_to_was;  // per rank: its kWasCommitted arrived
  Clock::time_point last_activity = Clock::now();
  c10::intrusive_ptr<c10d::Work> pending;  // the request receive being waited on
  // Request receives aborted by Stop(): kept alive, as the receive stays
  // posted in Gloo.
  std::vector<c10::intrusive_ptr<c10d::Work>> aborted;
  ServedStats stats;
  // Sends still in flight when the thread failed or was stopped: kept (with
  // the tensors they read) until the object dies, never waited for.
  std::deque<PendingOp> abandoned;
};

ServingThread::ServingThread(const ModelWeights& weights, ProcessGroups* groups)
    : weights_(weights), groups_(groups), shared_(std::make_shared<Shared>()) {
  PW_CHECK(groups_ && groups_->serving(), "ServingThread needs a serving group");
  rank_ = groups_->serving()->rank();
  world_ = groups_->serving()->size();
  shared_->done.assign(world_, false);
  shared_->committed_to_was.assign(world_, false);
  kept_x_.assign(world_, {-1, at::Tensor()});
  int threads = at::get_num_threads();
  thread_ = std::thread([this, threads] {
    // OpenMP thread counts are per thread: match the engine's.
    try {
      at::set_num_threads(threads);
    } catch (const std::exception&) {
    }
    Run();
  });
}

ServingThread::~ServingThread() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

void ServingThread::Stop() {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->stop = true;
  // Wakes the thread's request wait (UnboundBuffer::abortWaitRecv). The
  // receive stays posted in Gloo; only a peer that still sends would fill it,
  // and Stop() is for shutdown and failures, when the job ends anyway.
  if (shared_->pending) shared_->pending->abort();
}

Status ServingThread::error() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->error;
}

bool ServingThread::PeerCommittedToCas() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->peer_committed_to_cas;
}

int ServingThread::PeersCommittedToWas() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return static_cast<int>(
      std::count(shared_->committed_to_was.begin(), shared_->committed_to_was.end(), true));
}

ServedStats ServingThread::stats() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->stats;
}

void ServingThread::Run() {
  c10::InferenceMode inference_mode;
  Status failure;
  while (true) {
    at::Tensor header = at::zeros({wire::kHeaderLen}, at::kLong);
    Result<int> src = NextRequest(header);
    if (!src.ok()) {
      failure = src.status();
      break;
    }
    if (*src < 0) break;
    Status handled = Handle(wire::Header::Decode(header.data_ptr<int64_t>()), *src);
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->stats.bytes_received += wire::kHeaderLen * 8;
    shared_->last_activity = Clock::now();
    shared_->cv.notify_all();
    if (!handled.ok()) {
      failure = handled;
      break;
    }
  }
  FinishServing(failure);
}

std::string ServingThread::Who() const {
  return "weight pool serving thread of rank " + std::to_string(rank_);
}

// Gloo fails a receive (posting or waiting, without a deadline here) only
// when a peer's connection closed.
Result<int> ServingThread::NextRequest(const at::Tensor& header) {
  c10d::ProcessGroup& serving = groups_->serving()->backend();
  c10::intrusive_ptr<c10d::Work> work;
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (shared_->stop || shared_->done_count == world_ - 1) return -1;
    try {
      std::vector<at::Tensor> tensors{header};
      work = serving.recvAnysource(tensors, wire::kRequestTag);
    } catch (const std::exception& e) {
      return Status::IoError(Who() + ": posting the request receive failed: " + e.what())
          .WithReason(StatusReason::kPeerLost);
    }
    shared_->pending = work;
  }
  bool completed = false;
  std::string transport_error;
  try {
    completed = work->wait(kWaitForever);
  } catch (const c10::Error& e) {
    transport_error = e.what_without_backtrace();
  } catch (const std::exception& e) {
    transport_error = e.what();
  }
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->pending.reset();
    if (transport_error.empty() && !completed) shared_->aborted.push_back(work);  // by Stop()
  }
  if (!transport_error.empty()) {
    return Status::IoError(Who() + ": waiting for requests failed: " + transport_error +
                           " (a peer probably exited; the job should stop)")
        .WithReason(StatusReason::kPeerLost);
  }
  if (!completed) return -1;  // aborted by Stop()
  return work->sourceRank();
}

// Every client has finished (or the thread stops): the replies still in
// flight were received long ago on a normal end; on a failure they are
// abandoned, not waited for (a dead peer would never take them).
void ServingThread::FinishServing(Status failure) {
  bool normal = failure.ok();
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    normal = normal && !shared_->stop;
  }
  while (normal && !outstanding_.empty()) {
    Status st = outstanding_.front().op.Wait();
    outstanding_.pop_front();
    if (!st.ok()) {
      failure = st.WithContext(Who() + ": a reply did not complete");
      break;
    }
  }
  std::lock_guard<std::mutex> lock(shared_->mu);
  while (!outstanding_.empty()) {
    shared_->abandoned.push_back(std::move(outstanding_.front().op));
    outstanding_.pop_front();
  }
  if (!failure.ok() && shared_->error.ok()) shared_->error = failure;
  shared_->running = false;
  shared_->cv.notify_all();
}

Status ServingThread::Track(PendingOp op, const std::string& what, int client) {
  outstanding_.push_back({client, std::move(op)});
  while (outstanding_.size() > kMaxOutstandingSends) {
    Status st = outstanding_.front().op.Wait();
    outstanding_.pop_front();
    if (!st.ok()) return st.WithContext(what + ": an earlier reply failed");
  }
  return Status::Ok();
}

Status ServingThread::SettleSendsFor(int client, const std::string& what) {
  for (auto it = outstanding_.begin(); it != outstanding_.end();) {
    if (it->client != client) {
      ++it;
      continue;
    }
    Status st = it->op.Wait();
    it = outstanding_.erase(it);
    if (!st.ok()) return st.WithContext(what + ": an earlier reply failed");
  }
  return Status::Ok();
}

Status ServingThread::Handle(const wire::Header& header, int src) {
  const ModelConfig& config = weights_.config;
  const int64_t kind = header.kind;
  const int64_t layer = header.layer;
  const int64_t client = header.client;
  std::string where = "rank " + std::to_string(rank_) + " serving rank " + std::to_string(src);
  if (src < 0 || src >= world_ || src == rank_ || header.sender != src) {
    return Status::Internal(where + ": request header names sender " + std::to_string(header.sender) +
                            " (a protocol bug or a foreign message on the serving group)");
  }
  if (client < 0 || client >= world_ || client == rank_ ||
      (client != src && kind != wire::kPreAttention)) {
    return Status::Internal(where + ": request header names client " + std::to_string(client));
  }
  if (kind == wire::kAlive) return Status::Ok();  // the activity is the message
  if (kind == wire::kCasCommitted) {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->peer_committed_to_cas = true;
    return Status::Ok();
  }
  if (kind == wire::kWasCommitted) {
    // That client sends no CaS request again: what was kept for its next
    // PostAttention goes (its bytes are part of the serving reserve).
    kept_x_[src] = {-1, at::Tensor()};
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->committed_to_was[src] = true;
    return Status::Ok();
  }
  if (kind == wire::kDone) {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (!shared_->done[src]) {
      shared_->done[src] = true;
      ++shared_->done_count;
    }
    return Status::Ok();
  }
  if (layer < 0 || layer >= config.n_layers || layer % world_ != rank_ ||
      !weights_.blocks[layer].defined()) {
    return Status::Internal(where + ": asked for block " + std::to_string(layer) +
                            ", which this rank does not own (owner = block % " +
                            std::to_string(world_) + ")");
  }
  where += ", block " + std::to_string(layer);
  if (kind == wire::kFetch) {
    at::Tensor flat = PackBlock(weights_.blocks[layer], config);  // the block's own buffer
    PW_RETURN_IF_ERROR(
        Track(groups_->data_parallel().Send(flat, src, wire::kFetchReplyTag), where, src));
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->stats.bytes_sent += flat.numel();
    ++shared_->stats.served_fetches;
    return Status::Ok();
  }
  if (kind != wire::kPreAttention && kind != wire::kPostAttention) {
    return Status::Internal(where + ": unknown request kind " + std::to_string(kind));
  }
  return Compute(header, src, where);
}

Status ServingThread::Compute(const wire::Header& header, int src, const std::string& where) {
  const int64_t d = weights_.config.d_model;
  const int64_t rows = header.rows;
  const int client = static_cast<int>(header.client);
  if (rows <= 0 || rows > (int64_t{1} << 31) / d) {
    return Status::Internal(where + ": bad row count " + std::to_string(rows));
  }
  PW_RETURN_IF_ERROR(SettleSendsFor(client, where));
  int64_t received = 0;
  PW_ASSIGN_OR_RETURN(at::Tensor x, ComputeInput(header, src, where, received));
  std::pair<int64_t, at::Tensor>& kept = kept_x_[client];
  kept = {-1, at::Tensor()};
  at::Tensor attended, out;
  if (header.kind == wire::kPostAttention) {
    PW_ASSIGN_OR_RETURN(attended, ReceiveRows(header, src, "the attention output", where));
    received += rows * d * 4;
  }
  const BlockWeights& block = weights_.blocks[header.layer];
  try {
    out = header.kind == wire::kPreAttention ? PreAttention(block, x) : PostAttention(block, x, attended);
    out = out.contiguous();
  } catch (const c10::Error& e) {
    return Status::Internal(where + ": computing the block failed: " + e.what_without_backtrace());
  }
  if (header.kind == wire::kPreAttention) kept = {header.layer, x};
  PW_RETURN_IF_ERROR(ReplyOrForward(header, out, where));
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->stats.bytes_received += received;
  shared_->stats.bytes_sent += out.numel() * 4;
  ++shared_->stats.served_computes;
  return Status::Ok();
}

Result<at::Tensor> ServingThread::ReceiveRows(const wire::Header& header, int src, const char* what,
                                              const std::string& where) {
  // A payload from the client's engine, or from an owner forwarding a chain.
  const int tag = src == header.client ? wire::kPayloadTag : wire::kChainPayloadTag;
  at::Tensor t = at::empty({header.rows, weights_.config.d_model}, at::kFloat);
  if (Status st = groups_->serving()->PostRecv(t, src, tag).Wait(); !st.ok()) {
    return Status::IoError(where + ": receiving " + what + ": " + st.message());
  }
  return t;
}

Result<at::Tensor> ServingThread::ComputeInput(const wire::Header& header, int src, const std::string& where,
                                               int64_t& received) {
  if (header.kind == wire::kPreAttention || (header.flags & wire::kWithX)) {
    PW_ASSIGN_OR_RETURN(at::Tensor x, ReceiveRows(header, src, "the inputs", where));
    received += x.numel() * 4;
    return x;
  }
  const std::pair<int64_t, at::Tensor>& kept = kept_x_[header.client];
  if (kept.first != header.layer || kept.second.size(0) != header.rows) {
    return Status::Internal(where + ": PostAttention without the PreAttention of the block "
                            "(this owner keeps rows of block " + std::to_string(kept.first) +
                            " for client " + std::to_string(header.client) + ")");
  }
  return kept.second;
}

Status ServingThread::ReplyOrForward(const wire::Header& header, at::Tensor out, const std::string& where) {
  const int client = static_cast<int>(header.client);
  if (header.kind != wire::kPostAttention || !(header.flags & wire::kChain)) {
    return Track(groups_->data_parallel().Send(out, client, wire::kComputeReplyTag), where, client);
  }
  const int64_t next = header.layer + 1;
  const int next_owner = static_cast<int>(next % world_);
  if (next >= weights_.config.n_layers || next_owner == client || next_owner == rank_) {
    return Status::Internal(where + ": asked to forward to block " + std::to_string(next) +
                            ", which its client or this rank computes");
  }
  // The next block's PreAttention on the client's behalf (its owner
  // answers the client).
  const wire::Header forward{wire::kPreAttention, next, header.rows, rank_, client, 0};
  CommGroup& requests = *groups_->serving();
  PW_RETURN_IF_ERROR(Track(requests.Send(HeaderTensor(forward), next_owner, wire::kRequestTag), where, client));
  return Track(requests.Send(out, next_owner, wire::kChainPayloadTag), where, client);
}

Status ServingThread::WaitUntilAllDone(std::chrono::milliseconds idle_timeout) {
  std::unique_lock<std::mutex> lock(shared_->mu);
  while (shared_->running) {
    // The deadline moves with every request served: a peer that is still
    // working (and asking) is waited for; one that went silent is not.
    Clock::time_point deadline = shared_->last_activity + idle_timeout;
    if (Clock::now() >= deadline) break;
    shared_->cv.wait_until(lock, deadline);
  }
  if (!shared_->running) return shared_->error;
  std::string missing;
  for (int r = 0; r < world_; ++r) {
    if (r != rank_ && !shared_->done[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  }
  lock.unlock();
  Stop();
  if (thread_.joinable()) thread_.join();
  return Status::IoError(
      "rank " + std::to_string(rank_) + ": weight pool Finish heard nothing for " +
      std::to_string(idle_timeout.count() / 1000.0) + " s and rank(s) " + missing +
      " have not finished; they may have exited or hung (the job should stop; raise the "
      "group timeout if a rank legitimately runs longer than that without using the pool)");
}

}  // namespace pw
