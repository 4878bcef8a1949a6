#include "model/weight_grad_store.h"

#include <string>

#include "core/check.h"

namespace pw {

WeightGradStore::DeferScope::DeferScope(WeightGradStore& store, MicrobatchId microbatch)
    : store_(store) {
  std::lock_guard<std::mutex> lock(store_.mutex_);
  PW_CHECK(!store_.deferring_.has_value(), "nested WeightGradStore::DeferScope");
  store_.deferring_ = microbatch;
}

WeightGradStore::DeferScope::~DeferScope() {
  std::lock_guard<std::mutex> lock(store_.mutex_);
  store_.deferring_.reset();
}

std::optional<MicrobatchId> WeightGradStore::deferring() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return deferring_;
}

void WeightGradStore::Enqueue(Closure closure) {
  std::lock_guard<std::mutex> lock(mutex_);
  PW_CHECK(deferring_.has_value(), "WeightGradStore::Enqueue outside a DeferScope");
  pending_[*deferring_].push_back(std::move(closure));
}

int WeightGradStore::Run(MicrobatchId microbatch) {
  std::vector<Closure> closures;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pending_.find(microbatch);
    if (it == pending_.end()) return 0;
    closures = std::move(it->second);
    pending_.erase(it);
  }
  // Run outside the lock; each closure releases what it captured when the
  // vector is destroyed, so a microbatch's stash is freed once W finishes.
  for (Closure& closure : closures) {
    closure();
    closure = nullptr;  // free this layer's stash as soon as it is used
  }
  return static_cast<int>(closures.size());
}

void WeightGradStore::Discard(MicrobatchId microbatch) {
  std::vector<Closure> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pending_.find(microbatch);
    if (it == pending_.end()) return;
    dropped = std::move(it->second);
    pending_.erase(it);
  }
}

bool WeightGradStore::HasPending(MicrobatchId microbatch) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.count(microbatch) > 0;
}

int WeightGradStore::PendingClosures(MicrobatchId microbatch) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pending_.find(microbatch);
  return it == pending_.end() ? 0 : static_cast<int>(it->second.size());
}

std::vector<MicrobatchId> WeightGradStore::PendingMicrobatches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<MicrobatchId> out;
  for (const auto& [microbatch, closures] : pending_) out.push_back(microbatch);
  return out;
}

}  // namespace pw
