#include "runtime/optimizer.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <numbers>

namespace pw {

double LearningRate(const OptimizerConfig& config, int64_t step) {
  if (config.warmup_steps > 0 && step < config.warmup_steps) {
    return config.lr * static_cast<double>(step + 1) / config.warmup_steps;
  }
  const int64_t decay_steps = std::max<int64_t>(1, config.total_steps - config.warmup_steps);
  double progress = static_cast<double>(step - config.warmup_steps) / decay_steps;
  progress = std::clamp(progress, 0.0, 1.0);
  return config.min_lr +
         0.5 * (config.lr - config.min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
}

double SquaredGradNorm(const std::vector<at::Tensor>& params) {
  double sum = 0;
  for (const at::Tensor& p : params) {
    const at::Tensor& g = p.grad();
    if (!g.defined()) continue;
    sum += g.to(at::kDouble).pow(2).sum().item<double>();
  }
  return sum;
}

double ClipCoefficient(double global_norm, double max_norm) {
  if (max_norm <= 0) return 1.0;
  return std::min(1.0, max_norm / (global_norm + 1e-6));
}

void ScaleGrads(const std::vector<at::Tensor>& params, double coefficient) {
  if (coefficient == 1.0) return;
  c10::NoGradGuard no_grad;
  for (const at::Tensor& p : params) {
    at::Tensor g = p.grad();
    if (g.defined()) g.mul_(coefficient);
  }
}

AdamW::AdamW(std::vector<at::Tensor> params, const OptimizerConfig& config)
    : params_(std::move(params)), config_(config) {
  AdamWState* state = config_.state.get();
  if (state != nullptr) step_ = state->initial_steps;
  for (const at::Tensor& p : params_) {
    const AdamWState::Entry* adopted = nullptr;
    if (state != nullptr) {
      for (const AdamWState::Entry& e : state->entries) {
        if (e.param.is_same(p)) adopted = &e;
      }
    }
    if (adopted != nullptr) {
      exp_avg_.push_back(adopted->exp_avg);
      exp_avg_sq_.push_back(adopted->exp_avg_sq);
      continue;
    }
    exp_avg_.push_back(at::zeros_like(p));
    exp_avg_sq_.push_back(at::zeros_like(p));
    if (state != nullptr) state->entries.push_back({p, exp_avg_.back(), exp_avg_sq_.back()});
  }
}

void AdamW::Step(double lr) {
  c10::NoGradGuard no_grad;
  ++step_;
  const double bc1 = 1.0 - std::pow(config_.beta1, static_cast<double>(step_));
  const double bc2 = 1.0 - std::pow(config_.beta2, static_cast<double>(step_));
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor p = params_[i];
    const at::Tensor& g = p.grad();
    if (!g.defined()) continue;
    p.mul_(1.0 - lr * config_.weight_decay);
    exp_avg_[i].mul_(config_.beta1).add_(g, 1.0 - config_.beta1);
    exp_avg_sq_[i].mul_(config_.beta2).addcmul_(g, g, 1.0 - config_.beta2);
    at::Tensor denom = (exp_avg_sq_[i] / bc2).sqrt_().add_(config_.eps);
    p.addcdiv_(exp_avg_[i], denom, -lr / bc1);
  }
}

}  // namespace pw
