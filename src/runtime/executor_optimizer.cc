// The executor's gradient synchronisation and optimizer step (executor.h):
// REDUCE_GRAD launches the data-parallel all-reduce, the tied embedding and
// head exchange their gradients, and the rank's first OPT clips by the
// global norm before every stage steps its AdamW.
#include <ATen/ATen.h>

#include <cmath>
#include <vector>

#include "model/stage_module.h"
#include "runtime/executor.h"

namespace pw {

Status Executor::RunReduceGrad(const Action& a) {
  if (options_.data_parallel == nullptr || options_.data_parallel->size() <= 1) {
    return Status::Ok();
  }
  // Waited for at the rank's first OPT: the all-reduce runs on Gloo's
  // thread while this rank computes its other stages' I and W. Nothing
  // writes these gradients before OPT (AddGradientSync puts REDUCE_GRAD
  // after the stage's last gradient action).
  grad_buckets_.at(a.stage)->LaunchRest();
  return Status::Ok();
}

Status Executor::SyncTiedGrads() {
  const int last = schedule_.num_stages() - 1;
  const auto owns = [&](int s) { return schedule_.placement.RankOf(s) == options_.rank; };
  if (last == 0 || (!owns(0) && !owns(last))) return Status::Ok();
  at::Tensor first_weight = owns(0) ? Stage(0).TiedWeight() : at::Tensor();
  at::Tensor last_weight = owns(last) ? Stage(last).TiedWeight() : at::Tensor();
  if (!first_weight.defined() && !last_weight.defined()) return Status::Ok();  // untied
  c10::NoGradGuard no_grad;
  const auto grad_of = [](at::Tensor& w) -> at::Tensor& {
    if (!w.mutable_grad().defined()) w.mutable_grad() = at::zeros_like(w);  // no use this step
    return w.mutable_grad();
  };
  if (first_weight.defined() && last_weight.defined()) {  // both ends on this rank (V-shape)
    at::Tensor& a = grad_of(first_weight);
    at::Tensor& b = grad_of(last_weight);
    a.add_(b);
    b.copy_(a);
    return Status::Ok();
  }
  // Just below the evaluation tags (1 << 30 on) and far above any step's
  // tag ((microbatch · stages + stage) · 2 + 1): no other message matches it.
  constexpr int kTiedGradTag = (1 << 30) - 1;
  at::Tensor& mine = grad_of(first_weight.defined() ? first_weight : last_weight);
  const int peer = schedule_.placement.RankOf(first_weight.defined() ? last : 0);
  at::Tensor theirs = at::empty_like(mine);
  PendingOp recv = options_.pipeline->PostRecv(theirs, peer, kTiedGradTag);
  PendingOp send = options_.pipeline->Send(mine, peer, kTiedGradTag);
  PW_RETURN_IF_ERROR(WaitReportingIdle(recv, IdleReason::kNormWait));
  PW_RETURN_IF_ERROR(WaitReportingIdle(send, IdleReason::kNormWait));
  // Both ranks add the same two tensors (x + y == y + x in IEEE arithmetic):
  // the copies stay bit-identical.
  mine.add_(theirs);
  return Status::Ok();
}

double Executor::OwnSquaredGradNorm() {
  const int last = schedule_.num_stages() - 1;
  double sq = 0;
  for (int s : own_stages_) {
    std::vector<at::Tensor> params = Stage(s).Parameters();
    if (s == last && last > 0) {
      const at::Tensor copy = Stage(s).TiedWeight();
      if (copy.defined()) std::erase_if(params, [&](const at::Tensor& p) { return p.is_same(copy); });
    }
    sq += SquaredGradNorm(params);
  }
  return sq;
}

Status Executor::RunOptimizer(const Action& a) {
  if (!clipped_) {
    for (auto& [stage, buckets] : grad_buckets_) PW_RETURN_IF_ERROR(buckets->Wait());
    PW_RETURN_IF_ERROR(SyncTiedGrads());
    at::Tensor total = at::full({1}, OwnSquaredGradNorm(), at::kDouble);
    if (options_.pipeline != nullptr && options_.pipeline->size() > 1) {
      PendingOp reduce = options_.pipeline->AllReduce({total}, ReduceKind::kSum);
      PW_RETURN_IF_ERROR(WaitReportingIdle(reduce, IdleReason::kNormWait));
    }
    grad_norm_ = std::sqrt(total.item<double>());
    const double coefficient = ClipCoefficient(grad_norm_, options_.optimizer.grad_clip);
    for (int s : own_stages_) ScaleGrads(Stage(s).Parameters(), coefficient);
    clipped_ = true;
  }
  // A non-finite norm (the same on every rank) never reaches the weights: TrainSession stops or skips the step.
  if (!std::isfinite(grad_norm_)) return Status::Ok();
  optimizers_.at(a.stage).Step(lr_);
  return Status::Ok();
}

}  // namespace pw
