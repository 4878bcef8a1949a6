#include "infer/fetch_ring.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>

#include "comm/process_groups.h"
#include "infer/layer_math.h"
#include "infer/pool_protocol.h"
#include "infer/serving_thread.h"

namespace pw {
namespace {

namespace wire = pool_wire;
using Clock = std::chrono::steady_clock;

}  // namespace

FetchRing::FetchRing(const PoolOptions& options, const ModelConfig& config, ProcessGroups* groups, int rank,
                     int world, std::vector<int> remote, PoolStats* stats)
    : options_(options), config_(config), groups_(groups), rank_(rank), world_(world), remote_(std::move(remote)),
      stats_(stats) {
  ring_of_.assign(static_cast<size_t>(config_.n_layers), -1);
  for (size_t k = 0; k < remote_.size(); ++k) ring_of_[static_cast<size_t>(remote_[k])] = static_cast<int>(k);
}

FetchRing::~FetchRing() {
  for (Slot& slot : slots_) (void)WaitSlot(slot);
}

void FetchRing::AddSlots(int count) {
  const int total = std::min<int>(static_cast<int>(slots_.size()) + count, static_cast<int>(remote_.size()));
  while (static_cast<int>(slots_.size()) < total) {
    Slot slot;
    slot.flat = at::empty({BlockBytes(config_, options_.blocks_format)}, at::kByte);
    slot.views = UnpackBlock(slot.flat, config_, options_.blocks_layout, options_.blocks_format);
    slots_.push_back(std::move(slot));
  }
}

Status FetchRing::Restart(int last_k) {
  next_issue_ = 0;
  return IssueUpTo(last_k);
}

Status FetchRing::Issue(int k) {
  const int layer = remote_[k];
  Slot& slot = slots_[k % slots_.size()];
  if (slot.layer == layer) return Status::Ok();  // resident or on its way
  PW_RETURN_IF_ERROR(WaitSlot(slot));  // never post into memory still being filled
  const int owner = layer % world_;
  slot.receive = groups_->data_parallel().PostRecv(slot.flat, owner, wire::kFetchReplyTag);
  slot.request = groups_->serving()->Send(HeaderTensor(wire::Header::Own(wire::kFetch, layer, 0, rank_)), owner,
                                          wire::kRequestTag);
  slot.layer = layer;
  slot.in_flight = true;
  ++stats_->fetches;
  stats_->bytes_sent += wire::kHeaderLen * 8;
  stats_->bytes_received += slot.flat.numel();
  return Status::Ok();
}

Status FetchRing::IssueUpTo(int last_k) {
  last_k = std::min<int>(last_k, static_cast<int>(remote_.size()) - 1);
  for (; next_issue_ <= last_k; ++next_issue_) PW_RETURN_IF_ERROR(Issue(next_issue_));
  return Status::Ok();
}

Status FetchRing::WaitSlot(Slot& slot) {
  if (!slot.in_flight) return Status::Ok();
  slot.in_flight = false;
  const Clock::time_point start = Clock::now();
  Status status = slot.request.Wait();
  Status received = slot.receive.Wait();
  if (status.ok()) status = received;
  stats_->fetch_wait_s += std::chrono::duration<double>(Clock::now() - start).count();
  if (!status.ok()) {
    const int layer = slot.layer;
    slot.layer = -1;
    return Status::IoError(Where() + ": fetching block " + std::to_string(layer) + " from its owner rank " +
                           std::to_string(layer % world_) + ": " + status.message());
  }
  return Status::Ok();
}

Status FetchRing::WaitAll() {
  Status first;
  for (Slot& slot : slots_) {
    if (Status st = WaitSlot(slot); !st.ok() && first.ok()) first = st;
  }
  return first;
}

Result<const BlockWeights*> FetchRing::Acquire(int layer) {
  const int k = ring_of_[static_cast<size_t>(layer)];
  if (k >= next_issue_) next_issue_ = k;  // a skip forward: continue the ring from here
  PW_RETURN_IF_ERROR(IssueUpTo(k + options_.prefetch_depth));
  Slot& slot = slots_[k % slots_.size()];
  if (slot.layer != layer) PW_RETURN_IF_ERROR(Issue(k));  // out of order: fetch now
  PW_RETURN_IF_ERROR(WaitSlot(slot));
  return &slot.views;
}

}  // namespace pw
