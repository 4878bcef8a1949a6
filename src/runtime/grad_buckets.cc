#include "runtime/grad_buckets.h"

#include <ATen/ATen.h>

#include <utility>

namespace pw {

GradBuckets::GradBuckets(std::vector<at::Tensor> params, CommGroup* group, size_t bucket_bytes)
    : params_(std::move(params)), group_(group) {
  bucket_of_.assign(params_.size(), 0);
  size_t bytes = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    if (buckets_.empty() || bytes >= bucket_bytes) {
      buckets_.emplace_back();
      bytes = 0;
    }
    buckets_.back().members.push_back(k);
    bucket_of_[k] = buckets_.size() - 1;
    bytes += static_cast<size_t>(params_[k].numel()) * params_[k].element_size();
  }
  BeginStep();
}

void GradBuckets::BeginStep() {
  std::lock_guard<std::mutex> lock(mutex_);
  ready_.assign(params_.size(), 0);
  for (Bucket& b : buckets_) b.remaining = b.members.size();
  next_ = 0;
  started_.clear();
}

void GradBuckets::MarkReady(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (index >= params_.size() || ready_[index]) return;
  ready_[index] = 1;
  --buckets_[bucket_of_[index]].remaining;
  LaunchReadyLocked();
}

void GradBuckets::LaunchRest() {
  std::lock_guard<std::mutex> lock(mutex_);
  while (next_ < buckets_.size()) LaunchLocked(buckets_[next_++]);
}

Status GradBuckets::Wait() {
  std::vector<PendingOp> started;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    started.swap(started_);
  }
  Status first = Status::Ok();
  for (PendingOp& op : started) {
    Status st = op.Wait();
    if (first.ok() && !st.ok()) first = st;
  }
  return first;
}

void GradBuckets::LaunchReadyLocked() {
  while (next_ < buckets_.size() && buckets_[next_].remaining == 0) LaunchLocked(buckets_[next_++]);
}

void GradBuckets::LaunchLocked(Bucket& bucket) {
  std::vector<at::Tensor> grads;
  for (size_t k : bucket.members) {
    at::Tensor& p = params_[k];
    if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);  // the same list on every replica
    grads.push_back(p.grad());
  }
  started_.push_back(group_->AllReduce(grads, ReduceKind::kAvg));
}

}  // namespace pw
