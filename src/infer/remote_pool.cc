#include "infer/remote_pool.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>


#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "comm/process_groups.h"
#include "infer/auto_mode_policy.h"
#include "infer/fetch_ring.h"
#include "infer/layer_math.h"
#include "infer/pool_protocol.h"
#include "infer/serving_thread.h"
#include "os/memory.h"

namespace pw {
namespace {

namespace wire = pool_wire;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A request this rank makes for itself, as it travels.
at::Tensor Header(wire::Kind kind, int layer, int64_t rows, int sender, int64_t flags = 0) {
  return HeaderTensor(wire::Header::Own(kind, layer, rows, sender, flags));
}

// The blocks a rank does not own (block % world != rank), in layer order.
std::vector<int> RemoteBlocks(int n_layers, int rank, int world) {
  std::vector<int> remote;
  for (int layer = 0; layer < n_layers; ++layer) {
    if (layer % world != rank) remote.push_back(layer);
  }
  return remote;
}

class RemotePool final : public WeightPool {
 public:
  RemotePool(const PoolOptions& options, const ModelWeights& weights, ProcessGroups* groups,
             const PoolCalibration& calibration)
      : options_(options), weights_(weights), config_(weights.config), groups_(groups),
        calibration_(calibration), rank_(groups->serving()->rank()), world_(groups->serving()->size()),
        remote_(RemoteBlocks(config_.n_layers, rank_, world_)),
        owned_(config_.n_layers - static_cast<int>(remote_.size())),
        ring_(options_, config_, groups, rank_, world_, remote_, &stats_), policy_(options.learn) {
    if (options_.mode == PoolMode::kAuto && options_.start_without_cache) {
      cache_dropped_ = true;  // the plan gave the cache's bytes to the KV cache
      stats_.cache_dropped_after_pass = 0;
    } else if (options_.mode != PoolMode::kCas) {
      ring_.AddSlots(options_.cache_slots);
    }
    server_ = std::make_unique<ServingThread>(weights_, groups_);
  }

  ~RemotePool() override {
    // Fetches in flight complete while this rank still serves the others.
    (void)ring_.WaitAll();
  }

  Status BeginPass(int64_t rows) override {
    if (finished_) return Status::FailedPrecondition(Where() + ": BeginPass after Finish");
    if (in_pass_) return Status::FailedPrecondition(Where() + ": BeginPass twice without EndPass");
    if (rows < 0) return Status::InvalidArgument(Where() + ": BeginPass with rows < 0");
    PW_RETURN_IF_ERROR(ServerHealth());
    PoolMode mode = options_.mode;
    if (mode == PoolMode::kAuto && cache_dropped_) {
      mode = PoolMode::kCas;  // committed: no cache to run WaS with
    } else if (mode == PoolMode::kAuto && was_committed_) {
      mode = PoolMode::kWas;  // committed: it sends no CaS request again
    } else if (mode == PoolMode::kAuto) {
      mode = policy_.Choose(ChooseMode(calibration_, config_, rows, owned_, world_, ring_.slots(), options_.blocks_format));
    }
    PW_RETURN_IF_ERROR(KeepAlive());
    pass_rows_ = rows;
    pass_started_ = std::chrono::steady_clock::now();
    pass_attention_s_ = 0;
    if (remote_.empty()) mode = PoolMode::kReplicate;  // nothing to reach (n_layers < world)
    if (mode == PoolMode::kWas) ++stats_.passes_was;
    else if (mode == PoolMode::kCas) ++stats_.passes_cas;
    else ++stats_.passes_local;
    if (options_.mode == PoolMode::kAuto && stats_.passes_was + stats_.passes_cas +
                                                    stats_.passes_local > 1 &&
        mode != pass_mode_) {
      ++stats_.switches;
    }
    pass_mode_ = mode;
    in_pass_ = true;
    if (pass_mode_ == PoolMode::kWas) PW_RETURN_IF_ERROR(ring_.Restart(options_.prefetch_depth));
    return Status::Ok();
  }

  Result<at::Tensor> PreAttention(int layer, const at::Tensor& x) override {
    PW_RETURN_IF_ERROR(CheckCall(layer, x, "PreAttention"));
    if (x.size(0) == 0) return at::empty({0, int64_t{config_.qkv_width()}}, at::kFloat);
    c10::InferenceMode inference_mode;
    if (Owned(layer)) return pw::PreAttention(weights_.blocks[layer], x);
    if (pass_mode_ == PoolMode::kCas) {
      return RemoteCompute(wire::kPreAttention, layer, x, at::Tensor(), config_.qkv_width());
    }
    PW_ASSIGN_OR_RETURN(const BlockWeights* block, ring_.Acquire(layer));
    return pw::PreAttention(*block, x);
  }

  Result<at::Tensor> PostAttention(int layer, const at::Tensor& x,
                                   const at::Tensor& attended) override {
    PW_RETURN_IF_ERROR(CheckCall(layer, x, "PostAttention"));
    PW_RETURN_IF_ERROR(CheckCall(layer, attended, "PostAttention (attended)"));
    if (attended.size(0) != x.size(0)) {
      return Status::InvalidArgument(Where() + ": PostAttention of block " +
                                     std::to_string(layer) + " with " +
                                     std::to_string(x.size(0)) + " input rows but " +
                                     std::to_string(attended.size(0)) + " attended rows");
    }
    if (x.size(0) == 0) return at::empty({0, int64_t{config_.d_model}}, at::kFloat);
    c10::InferenceMode inference_mode;
    if (Owned(layer)) return pw::PostAttention(weights_.blocks[layer], x, attended);
    if (pass_mode_ == PoolMode::kCas) {
      return RemoteCompute(wire::kPostAttention, layer, x, attended, config_.d_model);
    }
    PW_ASSIGN_OR_RETURN(const BlockWeights* block, ring_.Acquire(layer));
    return pw::PostAttention(*block, x, attended);
  }

  Status EndPass() override {
    if (!in_pass_) return Status::FailedPrecondition(Where() + ": EndPass without BeginPass");
    in_pass_ = false;
    // Fetches a pass issued but did not use (it skipped blocks) complete
    // here, so no receive is left pending between passes.
    PW_RETURN_IF_ERROR(ring_.WaitAll());
    if (options_.mode == PoolMode::kAuto) {
      Learn();
      PW_RETURN_IF_ERROR(MaybeDropCache());
      PW_RETURN_IF_ERROR(MaybeCommitToWas());
    }
    // WaS, fixed or committed to by auto: the next pass starts with the
    // same blocks, so their fetches start now and overlap the head,
    // sampling and scheduling between passes (BeginPass finds them on their
    // way). Auto before it commits does not: its next pass may run CaS.
    const bool next_is_was = options_.mode == PoolMode::kWas ||
                             (options_.mode == PoolMode::kAuto && was_committed_);
    if (next_is_was && pass_mode_ == PoolMode::kWas) {
      PW_RETURN_IF_ERROR(ring_.Restart(options_.prefetch_depth - 1));
    }
    return ServerHealth();
  }

  int64_t HeldBytes() const override {
    return (owned_ + static_cast<int64_t>(ring_.slots())) * BlockBytes(config_, options_.blocks_format);
  }

  int64_t TakeReleasedKvBlocks() override {
    const int64_t blocks = released_pending_;
    released_pending_ = 0;
    return blocks;
  }

  PoolStats stats() const override {
    PoolStats stats = stats_;
    ServedStats served = server_->stats();
    stats.bytes_sent += served.bytes_sent;
    stats.bytes_received += served.bytes_received;
    stats.served_fetches = served.served_fetches;
    stats.served_computes = served.served_computes;
    return stats;
  }

  PoolMode mode() const override { return options_.mode; }
  int n_layers() const override { return config_.n_layers; }

  // CaS passes: the residual stream stays with the owners through each run
  // of remote blocks (pool_protocol.h): one round trip per remote block plus
  // one per run. Other passes: the default, block by block.
  Result<at::Tensor> RunBlocks(at::Tensor x, const AttendFn& untimed_attend) override {
    // Attention's time is taken out of what the pass teaches auto (Learn).
    const AttendFn attend = [&](int layer, const at::Tensor& qkv) -> Result<at::Tensor> {
      const Clock::time_point start = Clock::now();
      Result<at::Tensor> attended = untimed_attend(layer, qkv);
      pass_attention_s_ += Seconds(start);
      return attended;
    };
    if (!in_pass_ || pass_mode_ != PoolMode::kCas || !x.defined() || x.dim() != 2 ||
        x.size(0) == 0) {
      return WeightPool::RunBlocks(std::move(x), attend);
    }
    PW_RETURN_IF_ERROR(CheckCall(0, x, "RunBlocks"));
    c10::InferenceMode inference_mode;
    const int64_t rows = x.size(0), d = config_.d_model;
    bool chained = false;  // the next qkv comes from the previous owner's forward
    at::Tensor next_qkv;
    PendingOp next_reply;
    for (int layer = 0; layer < config_.n_layers; ++layer) {
      if (Owned(layer)) {
        const BlockWeights& block = weights_.blocks[layer];
        PW_ASSIGN_OR_RETURN(at::Tensor attended, attend(layer, pw::PreAttention(block, x)));
        x = pw::PostAttention(block, x, attended);
        continue;
      }
      const int owner = layer % world_;
      at::Tensor qkv;
      if (chained) {
        PW_RETURN_IF_ERROR(WaitReply(next_reply, wire::kPreAttention, layer, rows));
        ++stats_.remote_computes;  // the forwarded PreAttention, computed for this rank
        qkv = std::move(next_qkv);
        chained = false;
      } else {
        PW_ASSIGN_OR_RETURN(qkv, RemoteCompute(wire::kPreAttention, layer, x, at::Tensor(),
                                               config_.qkv_width()));
      }
      PW_ASSIGN_OR_RETURN(at::Tensor attended, attend(layer, qkv));
      qkv.reset();  // not held through the block's second half (the plan's workspace)
      const int next = layer + 1;
      if (next < config_.n_layers && !Owned(next) && next % world_ != owner) {
        next_qkv = at::empty({rows, int64_t{config_.qkv_width()}}, at::kFloat);
        next_reply = groups_->data_parallel().PostRecv(next_qkv, next % world_,
                                                       wire::kComputeReplyTag);
        SendRequest(wire::kPostAttention, layer, rows, wire::kChain, {attended});
        chained = true;
      } else {
        PW_ASSIGN_OR_RETURN(x, RemoteCompute(wire::kPostAttention, layer, x, attended, d,
                                             /*kept=*/true));
      }
    }
    return x;
  }

  Status Finish() override {
    if (finished_) return finish_status_;
    finished_ = true;
    Status status = in_pass_ ? EndPass() : Status::Ok();
    // Announce: this rank sends no more requests. Then serve until every
    // other rank has announced too.
    std::vector<at::Tensor> headers;
    CommGroup& requests = *groups_->serving();
    if (!status.ok()) {
      finish_status_ = status;
      return status;
    }
    // Fetches started for a next pass that never came.
    if (Status st = ring_.WaitAll(); !st.ok() && status.ok()) status = st;
    std::vector<PendingOp> sends = TellEveryOther(wire::kDone, headers);
    for (PendingOp& op : alive_sends_) sends.push_back(std::move(op));
    alive_sends_.clear();
    for (PendingOp& op : sends) {
      Status st = op.Wait();
      if (!st.ok() && status.ok()) status = Status::IoError(Where() + ": Finish: " + st.message());
    }
    Status served = server_->WaitUntilAllDone(requests.timeout());
    finish_status_ = status.ok() ? served : status;
    return finish_status_;
  }

 private:
  std::string Where() const { return "weight pool of rank " + std::to_string(rank_); }

  Status ServerHealth() const {
    Status st = server_->error();
    if (st.ok()) return st;
    return Status::IoError(Where() + ": the serving thread failed: " + st.message());
  }

  Status CheckCall(int layer, const at::Tensor& x, const char* what) const {
    std::string where = Where() + ": " + what + " of block " + std::to_string(layer);
    if (!in_pass_) return Status::FailedPrecondition(where + " outside BeginPass/EndPass");
    if (layer < 0 || layer >= config_.n_layers) {
      return Status::InvalidArgument(where + ": the model has " +
                                     std::to_string(config_.n_layers) + " blocks");
    }
    if (!x.defined() || x.dim() != 2 || x.size(1) != config_.d_model ||
        x.scalar_type() != at::kFloat || !x.device().is_cpu()) {
      return Status::InvalidArgument(where + ": want a CPU float32 tensor [rows, " +
                                     std::to_string(config_.d_model) + "]");
    }
    return Status::Ok();
  }

  bool Owned(int layer) const { return layer % world_ == rank_; }

  // Sends kAlive to every other rank when this rank has sent nothing for a
  // quarter of the group timeout (pool_protocol.h says why). The sends of
  // the previous round are waited for first (they completed long ago).
  Status KeepAlive() {
    CommGroup& requests = *groups_->serving();
    const Clock::time_point now = Clock::now();
    if (now - last_alive_ < requests.timeout() / 4) return Status::Ok();
    last_alive_ = now;
    for (PendingOp& op : alive_sends_) {
      if (Status st = op.Wait(); !st.ok()) return Status::IoError(Where() + ": " + st.message());
    }
    alive_headers_.clear();
    alive_sends_ = TellEveryOther(wire::kAlive, alive_headers_);
    return Status::Ok();
  }

  // Auto: tells the policy (infer/auto_mode_policy.h) how the pass went;
  // when learning, its measured wall time beyond ChooseMode's prediction
  // for its mode becomes part of that mode's correction (see remote_pool.h). Wall time, not waits: with ranks sharing cores, WaS's
  // transfers take CPU from compute on both ends, which slows the compute
  // and shows in no wait. Less the pass's attention (timed in RunBlocks):
  // both modes run it alike, and its time follows the rows and their
  // histories, which ChooseMode does not model, so a correction that held
  // a prefill's attention overstated its mode at every decode pass after.
  // The job's first pass teaches nothing: it runs cold (a WaS pass fetches
  // every remote block, with no cache kept from a pass before, and every
  // buffer is touched for the first time), twice the time of the passes
  // after it, and as WaS's correction it made CaS look faster for the next
  // passes, which it was not.
  void Learn() {
    const double measured = Seconds(pass_started_) - pass_attention_s_;
    policy_.EndPass(pass_mode_, PassesRun(), measured,
                    ChooseMode(calibration_, config_, pass_rows_, owned_, world_, ring_.slots(), options_.blocks_format));
    stats_.learned_extra_was_s = policy_.extra_was_s();
    stats_.learned_extra_cas_s = policy_.extra_cas_s();
  }

  // Tells every other rank's serving thread `kind` (kCasCommitted or
  // kWasCommitted). Blocks until sent.
  Status Announce(wire::Kind kind) {
    for (PendingOp& sent : TellEveryOther(kind, commit_headers_)) {
      if (Status st = sent.Wait(); !st.ok()) return Status::IoError(Where() + ": " + st.message());
    }
    return Status::Ok();
  }

  // Sends a `kind` header (no payload) to every other rank's serving
  // thread. The headers go into `keep`, which holds them until the sends
  // complete.
  std::vector<PendingOp> TellEveryOther(wire::Kind kind, std::vector<at::Tensor>& keep) {
    std::vector<PendingOp> sends;
    for (int peer = 0; peer < world_; ++peer) {
      if (peer == rank_) continue;
      keep.push_back(Header(kind, -1, 0, rank_));
      sends.push_back(groups_->serving()->Send(keep.back(), peer, wire::kRequestTag));
    }
    return sends;
  }

  // Auto: after kCommitAfterPasses CaS passes in a row (when learning, with
  // both modes measured kTaughtBeforeDroppingCache times), commits to CaS
  // when ShouldDropWeightCache says so: frees the slots (every fetch was
  // waited for by EndPass) and returns their memory to the system, so the
  // KV cache can take it (TakeReleasedKvBlocks). A peer's commitment (kCasCommitted) is followed
  // at once, unless this rank committed to WaS: CaS passes are slow while
  // the owners they ask run WaS passes of their own, so the job commits as
  // one; the first rank to decide tells the others.
  Status MaybeDropCache() {
    if (cache_dropped_ || was_committed_ || ring_.slots() == 0 ||
        options_.kv_gain_without_cache <= 1.0) {
      return Status::Ok();
    }
    const bool follow = server_->PeerCommittedToCas();
    if (!follow &&
        (!policy_.CasSettled() ||
         !ShouldDropWeightCache(calibration_, config_, pass_rows_, options_.kv_gain_without_cache,
                                owned_, world_, policy_.extra_was_s(), policy_.extra_cas_s(), ring_.slots(),
                                options_.blocks_format))) {
      return Status::Ok();
    }
    if (!follow) PW_RETURN_IF_ERROR(Announce(wire::kCasCommitted));
    ring_.DropSlots();
    ReturnFreedHeapToSystem();  // glibc would keep the freed slots resident in its heap
    cache_dropped_ = true;
    released_pending_ += options_.kv_blocks_freed_by_cache;
    stats_.cache_dropped_after_pass = PassesRun();
    return Status::Ok();
  }

  // Auto: after kCommitAfterPasses WaS passes in a row (when learning, with
  // both modes measured) in which WaS is still predicted faster (with what
  // the passes taught), after a WaS pass once WasWinsDecisively (when
  // learning: both modes measured), or at once when a peer committed to
  // WaS, commits to WaS: no CaS pass from then on, and every other rank is
  // told (kWasCommitted). Once every other rank has committed too, no CaS
  // request can come, so the serving reserve becomes KV blocks
  // (TakeReleasedKvBlocks). A rank that committed to CaS stays with it and
  // serves the others' WaS fetches; then nobody frees its serving reserve.
  Status MaybeCommitToWas() {
    if (cache_dropped_ || ring_.slots() == 0 || options_.kv_blocks_freed_by_serving <= 0) {
      return Status::Ok();
    }
    if (!was_committed_) {
      const bool follow = server_->PeersCommittedToWas() > 0;
      const PassCost cost = ChooseMode(calibration_, config_, pass_rows_, owned_, world_, ring_.slots(), options_.blocks_format);
      if (!follow && !policy_.ShouldCommitToWas(pass_mode_, cost)) return Status::Ok();
      PW_RETURN_IF_ERROR(Announce(wire::kWasCommitted));
      was_committed_ = true;
      stats_.was_committed_after_pass = PassesRun();
    }
    if (!serving_released_ && server_->PeersCommittedToWas() == world_ - 1) {
      serving_released_ = true;
      // Every slot is idle (EndPass waited for them), so the vector may
      // grow; blocks found at a slot index that moved are fetched again once.
      ring_.AddSlots(options_.slots_added_by_serving);
      if (options_.prefetch_depth_after_serving > 0) {
        options_.prefetch_depth = options_.prefetch_depth_after_serving;
      }
      released_pending_ += options_.kv_blocks_freed_by_serving;
      stats_.serving_released_after_pass = PassesRun();
    }
    return Status::Ok();
  }

  int64_t PassesRun() const { return stats_.passes_was + stats_.passes_cas + stats_.passes_local; }

  // Sends a compute request for block `layer` and its payloads to the
  // block's owner; the sends are waited for with the next reply.
  void SendRequest(wire::Kind kind, int layer, int64_t rows, int64_t flags,
                   const std::vector<at::Tensor>& payloads) {
    const int owner = layer % world_;
    CommGroup& requests = *groups_->serving();
    sends_.push_back(
        requests.Send(Header(kind, layer, rows, rank_, flags), owner, wire::kRequestTag));
    stats_.bytes_sent += wire::kHeaderLen * 8;
    for (const at::Tensor& t : payloads) {
      sends_.push_back(requests.Send(t.contiguous(), owner, wire::kPayloadTag));
      stats_.bytes_sent += t.numel() * 4;
    }
    ++stats_.remote_computes;
  }

  // Waits for a compute reply (and the requests sent before it).
  Status WaitReply(PendingOp& reply, wire::Kind kind, int layer, int64_t rows) {
    Clock::time_point start = Clock::now();
    Status status = reply.Wait();
    for (PendingOp& op : sends_) {
      Status st = op.Wait();
      if (status.ok()) status = st;
    }
    sends_.clear();
    stats_.remote_wait_s += Seconds(start);
    if (!status.ok()) {
      return Status::IoError(Where() + ": " +
                             (kind == wire::kPreAttention ? "PreAttention" : "PostAttention") +
                             " of block " + std::to_string(layer) + " on its owner rank " +
                             std::to_string(layer % world_) + ": " + status.message());
    }
    const int64_t cols = kind == wire::kPreAttention ? config_.qkv_width() : config_.d_model;
    stats_.bytes_received += rows * cols * 4;
    return Status::Ok();
  }

  // One round trip: the part's inputs to the owner, its result back. A
  // PostAttention sends x only when the owner does not keep it already
  // (`kept`: the caller knows it does; else the x of this pool's last
  // PreAttention of the same block, the same tensor, is kept).
  Result<at::Tensor> RemoteCompute(wire::Kind kind, int layer, const at::Tensor& x,
                                   const at::Tensor& attended, int64_t out_cols,
                                   bool kept = false) {
    const int owner = layer % world_;
    const int64_t rows = x.size(0);
    at::Tensor out = at::empty({rows, out_cols}, at::kFloat);
    PendingOp reply = groups_->data_parallel().PostRecv(out, owner, wire::kComputeReplyTag);
    if (kind == wire::kPreAttention) {
      SendRequest(kind, layer, rows, 0, {x});
      last_pre_layer_ = layer;
      last_pre_x_ = x;
    } else {
      kept = kept || (last_pre_layer_ == layer && last_pre_x_.defined() &&
                      last_pre_x_.unsafeGetTensorImpl() == x.unsafeGetTensorImpl());
      if (kept) {
        SendRequest(kind, layer, rows, 0, {attended});
      } else {
        SendRequest(kind, layer, rows, wire::kWithX, {x, attended});
      }
      last_pre_layer_ = -1;
      last_pre_x_ = at::Tensor();
    }
    PW_RETURN_IF_ERROR(WaitReply(reply, kind, layer, rows));
    return out;
  }

  PoolOptions options_;
  const ModelWeights& weights_;
  ModelConfig config_;
  ProcessGroups* groups_;
  PoolCalibration calibration_;
  const int rank_, world_;
  const std::vector<int> remote_;  // non-owned layers in order
  const int owned_;
  PoolStats stats_;
  FetchRing ring_;  // WaS's cache (infer/fetch_ring.h)
  bool cache_dropped_ = false;     // auto committed to CaS (its cache freed)
  bool was_committed_ = false;     // auto committed to WaS
  bool serving_released_ = false;  // ... and so had every other rank
  int64_t released_pending_ = 0;   // KV blocks freed, not yet taken
  std::vector<at::Tensor> commit_headers_;  // kCasCommitted headers (kept until sent)
  AutoModePolicy policy_;           // auto: what the passes taught, when to commit
  double pass_attention_s_ = 0;     // the pass in flight's time in attention (RunBlocks)
  bool in_pass_ = false, finished_ = false;
  PoolMode pass_mode_ = PoolMode::kWas;
  int64_t pass_rows_ = 0;
  Clock::time_point last_alive_ = Clock::now();
  std::vector<at::Tensor> alive_headers_;  // kept alive until their sends complete
  std::vector<PendingOp> alive_sends_;
  std::chrono::steady_clock::time_point pass_started_;  // BeginPass of the pass in flight
  std::vector<PendingOp> sends_;  // CaS requests in flight (waited with the reply)
  int last_pre_layer_ = -1;       // CaS: the block and x of the last PreAttention
  at::Tensor last_pre_x_;
  Status finish_status_;
  std::unique_ptr<ServingThread> server_;
};

}  // namespace

Result<std::unique_ptr<WeightPool>> MakeRemotePool(const PoolOptions& options,
                                                   const ModelWeights& weights,
                                                   ProcessGroups* groups,
                                                   const PoolCalibration& calibration) {
  return std::unique_ptr<WeightPool>(
      std::make_unique<RemotePool>(options, weights, groups, calibration));
}

}  // namespace pw
