// SplitLinear: y = x·Wᵀ + b as a custom autograd Function whose backward can
// leave the weight gradients for later (split backward, zero-bubble `I`/`W`).
//
// Backward always returns dX = dY·W (when x needs a gradient). For dW = dYᵀ·X
// and db = Σ dY it looks at the WeightGradStore given at forward time:
//   - store deferring (inside a WeightGradStore::DeferScope, i.e. `I`): it
//     returns no gradient for W and b and queues a closure that holds X
//     (detached: no graph) and dY, and that adds dW/db into weight.grad /
//     bias.grad when the stage runs `W` (WeightGradStore::Run);
//   - otherwise (fused `B`, or store == nullptr): it returns dW/db to autograd,
//     which accumulates them into .grad like any other parameter.
// Either way .grad ends up with the same values as plain autograd through
// torch::nn::functional::linear (model/split_linear_test.cc checks it).
//
// Only this header's declarations are LibTorch-light (ATen's Tensor); the
// autograd Function lives in split_linear.cc.
#pragma once

#include <ATen/core/Tensor.h>

#include "model/weight_grad_store.h"

namespace pw {

// x: [..., in] (any leading dims), weight: [out, in] (a leaf parameter),
// bias: [out] or undefined. Returns [..., out]. `store` may be null; it must
// outlive the autograd graph built here. Thread-safety: as any LibTorch op.
// Shape mismatches throw c10::Error (a programming error in the caller).
at::Tensor SplitLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                       WeightGradStore* store);

}  // namespace pw
