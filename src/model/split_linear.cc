#include "model/split_linear.h"

#include <torch/autograd.h>

#include <cstdint>

#include "core/check.h"

namespace pw {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Adds `delta` into param.grad the way AccumulateGrad does for a dense leaf
// (first gradient: take it; later ones: add in place).
void AccumulateInto(const at::Tensor& param, const at::Tensor& delta) {
  at::Tensor& grad = param.mutable_grad();
  if (!grad.defined()) {
    grad = delta;
  } else {
    grad.add_(delta);
  }
}

// Shared by the two Functions below (LibTorch 1.13's Function::apply does not
// accept an undefined tensor input, so "no bias" is its own Function).
// The leaves (weight, bias) travel in saved_data as themselves, so that a
// W closure accumulates into their .grad: through save_for_backward they
// would come back as new tensors whenever saved-tensor hooks are on
// (activation offload, model/activation_offload.h: SavedVariable::unpack
// wraps what the hook returns), and .grad would land on those. Only the
// activation x is a saved variable. The store travels as an integer:
// AutogradContext::saved_data holds IValues, and the store outlives the graph
// (it belongs to the stage).
at::Tensor LinearForward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                         const at::Tensor& bias, int64_t store_address) {
  ctx->save_for_backward({x});
  ctx->saved_data["weight"] = weight;
  if (bias.defined()) ctx->saved_data["bias"] = bias;
  ctx->saved_data["store"] = store_address;
  const int64_t in = weight.size(1), out = weight.size(0);
  at::Tensor x2 = x.reshape({-1, in});
  at::Tensor y2 = bias.defined() ? at::addmm(bias, x2, weight.t()) : x2.mm(weight.t());
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = out;
  return y2.view(shape);
}

// Returns {dX, dW, db} (db only with a bias); dW/db undefined when deferred.
variable_list LinearBackward(AutogradContext* ctx, const variable_list& grad_outputs) {
  variable_list saved = ctx->get_saved_variables();
  const at::Tensor& x = saved[0];
  const at::Tensor weight = ctx->saved_data["weight"].toTensor();
  const bool has_bias = ctx->saved_data.count("bias") > 0;
  const at::Tensor bias = has_bias ? ctx->saved_data["bias"].toTensor() : at::Tensor();
  auto* store = reinterpret_cast<WeightGradStore*>(ctx->saved_data["store"].toInt());
  const int64_t in = weight.size(1), out = weight.size(0);

  variable_list grads(has_bias ? 3 : 2);
  at::Tensor grad2 = grad_outputs[0].reshape({-1, out});
  if (ctx->needs_input_grad(0)) grads[0] = grad2.mm(weight).view(x.sizes());

  const bool need_weight = ctx->needs_input_grad(1);
  const bool need_bias = has_bias && ctx->needs_input_grad(2);
  if (!need_weight && !need_bias) return grads;

  // X without its graph: the stash must not keep earlier layers' saved
  // tensors alive between I and W.
  at::Tensor x2 = x.detach().reshape({-1, in});
  if (store != nullptr && store->deferring().has_value()) {
    PW_CHECK(weight.is_leaf() && (!has_bias || bias.is_leaf()),
             "split backward needs leaf parameters for the weight and bias");
    store->Enqueue([grad2 = grad2.detach(), x2, weight, bias, need_weight, need_bias, store] {
      at::NoGradGuard no_grad;
      if (need_weight) {
        AccumulateInto(weight, grad2.t().mm(x2));
        store->NotifyAccumulated(weight.unsafeGetTensorImpl());
      }
      if (need_bias) {
        AccumulateInto(bias, grad2.sum(0));
        store->NotifyAccumulated(bias.unsafeGetTensorImpl());
      }
    });
    return grads;
  }
  if (need_weight) grads[1] = grad2.t().mm(x2);
  if (need_bias) grads[2] = grad2.sum(0);
  return grads;
}

class SplitLinearFunction : public torch::autograd::Function<SplitLinearFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias, int64_t store_address) {
    return LinearForward(ctx, x, weight, bias, store_address);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    variable_list grads = LinearBackward(ctx, grad_outputs);
    grads.emplace_back();  // store_address
    return grads;
  }
};

class SplitLinearNoBiasFunction : public torch::autograd::Function<SplitLinearNoBiasFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            int64_t store_address) {
    return LinearForward(ctx, x, weight, at::Tensor(), store_address);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    variable_list grads = LinearBackward(ctx, grad_outputs);
    grads.emplace_back();  // store_address
    return grads;
  }
};

}  // namespace

at::Tensor SplitLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                       WeightGradStore* store) {
  const auto address = static_cast<int64_t>(reinterpret_cast<intptr_t>(store));
  if (!bias.defined()) return SplitLinearNoBiasFunction::apply(x, weight, address);
  return SplitLinearFunction::apply(x, weight, bias, address);
}

}  // namespace pw
