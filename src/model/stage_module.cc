#include "model/stage_module.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/autograd.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <sstream>

#include "model/activation_offload.h"
#include "model/gpt.h"
#include "model/weight_grad_store.h"

namespace pw {
namespace {

std::string Shape(const at::Tensor& t) {
  if (!t.defined()) return "undefined";
  std::ostringstream out;
  out << t.sizes() << " " << t.scalar_type();
  return out.str();
}

// Tells the stage after autograd accumulated into one parameter's .grad.
class AccumulatedPostHook : public torch::autograd::FunctionPostHook {
 public:
  AccumulatedPostHook(const StageModule::GradAccumulated* callback, size_t index)
      : callback_(callback), index_(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& inputs) override {
    // An undefined incoming gradient added nothing (a split Linear's weight
    // in I: its gradient waits for W).
    if (*callback_ && !inputs.empty() && inputs[0].defined()) (*callback_)(index_);
    return outputs;
  }

 private:
  const StageModule::GradAccumulated* callback_;  // the stage's; outlives its accumulators' use
  size_t index_;
};

}  // namespace

// What F leaves for the backward of one microbatch.
struct MicrobatchState {
  at::Tensor input_leaf;  // detached input that requires grad; undefined on stage 0
  at::Tensor output;      // output with its graph (loss on the last stage); undefined once dropped
  // What Recompute needs to run F again, bit for bit: the input as given
  // (token ids on stage 0), the targets, and the dropout generator's state
  // before F (only with dropout).
  at::Tensor input;
  at::Tensor targets;
  at::Tensor dropout_state;
  // The tensors F's graph saved, registered for OFFLOAD/RELOAD; null unless
  // the microbatch is offloaded (SetOffloadedMicrobatches).
  std::unique_ptr<OffloadStore> offload;
};

struct StageModule::Impl {
  ModelConfig config;
  StageSpan span;
  std::shared_ptr<GptSegment> segment;
  WeightGradStore store;
  at::Generator dropout_gen;
  bool training = true;
  std::map<MicrobatchId, MicrobatchState> saved;
  // OFFLOAD/RELOAD: the microbatches whose F registers its saved tensors,
  // where OFFLOAD moves them, and what moved so far.
  std::set<MicrobatchId> offloaded;
  c10::Device offload_host = c10::kCPU;
  StageModule::OffloadCounters offload_counters;
  // SetGradAccumulatedCallback: the callback, each parameter's index by its
  // TensorImpl, and the parameters' AccumulateGrad nodes, held so that the
  // hooks on them live as long as the stage (a parameter holds its
  // accumulator weakly; every graph of a later F reuses a live one).
  GradAccumulated grad_accumulated;
  std::unordered_map<const void*, size_t> param_index;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;

  void OnAccumulated(const void* parameter) const {
    if (!grad_accumulated) return;
    if (auto it = param_index.find(parameter); it != param_index.end()) grad_accumulated(it->second);
  }

  std::string Where(char action, MicrobatchId microbatch) const {
    return "stage " + std::to_string(span.stage) + ", action " + std::to_string(span.stage) +
           action + std::to_string(microbatch);
  }
  // For the memory actions (DROP, RECOMPUTE, OFFLOAD, RELOAD), which name
  // themselves in their messages: "stage S".
  std::string StageWhere() const { return "stage " + std::to_string(span.stage); }

  // Checks the stage input (and targets on the last stage) before running.
  Status CheckInputs(const at::Tensor& input, const at::Tensor& targets) const {
    if (!input.defined()) return Status::InvalidArgument("input is undefined");
    const bool tokens = span.has_embedding;
    const int64_t want_dims = tokens ? 2 : 3;
    bool ok = input.dim() == want_dims && input.size(0) > 0 && input.size(1) > 0 &&
              input.size(1) <= config.seq_len &&
              input.scalar_type() == (tokens ? at::kLong : at::kFloat) &&
              (tokens || input.size(2) == config.d_model);
    if (!ok) {
      return Status::InvalidArgument(
          "input is " + Shape(input) + "; expected " +
          (tokens ? std::string("int64 token ids [B, T]")
                  : "float [B, T, " + std::to_string(config.d_model) + "]") +
          " with 0 < T <= seq_len (" + std::to_string(config.seq_len) + ")");
    }
    if (tokens) {
      const int64_t lo = input.min().item<int64_t>(), hi = input.max().item<int64_t>();
      if (lo < 0 || hi >= config.vocab_size) {
        return Status::InvalidArgument("token ids range over [" + std::to_string(lo) + ", " +
                                       std::to_string(hi) + "] but vocab_size is " +
                                       std::to_string(config.vocab_size));
      }
    }
    if (span.has_head) {
      if (!targets.defined() || targets.scalar_type() != at::kLong || targets.dim() != 2 ||
          targets.size(0) != input.size(0) || targets.size(1) != input.size(1)) {
        return Status::InvalidArgument("the last stage needs int64 targets [" +
                                       std::to_string(input.size(0)) + ", " +
                                       std::to_string(input.size(1)) + "], got " +
                                       Shape(targets));
      }
    }
    return Status::Ok();
  }

  // F's computation: builds `state.output` with its graph from state.input
  // (and state.targets), the boundary leaf included; for an offloaded
  // microbatch, registers the tensors the graph saves in a new store.
  void RunForward(MicrobatchId microbatch, MicrobatchState& state) {
    at::AutoGradMode grad_mode(true);
    at::Tensor stage_input = state.input;
    if (!span.has_embedding) {
      // The stage boundary: a leaf that collects d objective / d input.
      state.input_leaf = state.input.detach().requires_grad_(true);
      stage_input = state.input_leaf;
    }
    state.offload.reset();
    if (offloaded.count(microbatch) == 0) {
      state.output = segment->Forward(stage_input, state.targets, Context(/*with_store=*/true));
      return;
    }
    // Parameters, input and targets stay: their owners hold them anyway.
    std::unordered_set<const void*> kept;
    for (const at::Tensor& p : segment->parameters()) kept.insert(p.storage().unsafeGetStorageImpl());
    for (const at::Tensor* t : {&state.input, &state.targets}) {
      if (t->defined() && t->has_storage()) kept.insert(t->storage().unsafeGetStorageImpl());
    }
    state.offload = std::make_unique<OffloadStore>(std::move(kept));
    CaptureScope capture(*state.offload);
    state.output = segment->Forward(stage_input, state.targets, Context(/*with_store=*/true));
  }

  ForwardContext Context(bool with_store) {
    ForwardContext ctx;
    ctx.store = with_store ? &store : nullptr;
    ctx.dropout = (training && config.dropout > 0.0) ? &dropout_gen : nullptr;
    return ctx;
  }
};

StageModule::StageModule(const ModelConfig& config, const StageSpan& span, uint64_t seed,
                         uint64_t dropout_seed)
    : impl_(std::make_unique<Impl>()) {
  impl_->config = config;
  impl_->span = span;
  impl_->segment = std::make_shared<GptSegment>(config, span, seed);
  impl_->dropout_gen = at::make_generator<at::CPUGeneratorImpl>(dropout_seed);
  // Before this stage's first forward (see model/activation_offload.h).
  PW_CHECK(InstallOffloadEngine(), "the autograd engine was replaced; OFFLOAD cannot see saved tensors");
}

StageModule::~StageModule() = default;

StageId StageModule::stage() const { return impl_->span.stage; }
const StageSpan& StageModule::span() const { return impl_->span; }
bool StageModule::is_first() const { return impl_->span.has_embedding; }
bool StageModule::is_last() const { return impl_->span.has_head; }

Result<at::Tensor> StageModule::Forward(MicrobatchId microbatch, const at::Tensor& input,
                                        const at::Tensor& targets) {
  Impl& s = *impl_;
  const std::string where = s.Where('F', microbatch);
  if (IsHeld(microbatch)) {
    return Status::FailedPrecondition(
        where + ": microbatch " + std::to_string(microbatch) +
        " still holds state from an earlier forward; its backward (B, or I and W) must run "
        "before it is forwarded again");
  }
  PW_RETURN_IF_ERROR(s.CheckInputs(input, targets).WithContext(where));
  MicrobatchState state;
  state.input = input;
  state.targets = targets;
  if (s.Context(true).dropout != nullptr) state.dropout_state = s.dropout_gen.get_state();
  s.RunForward(microbatch, state);
  at::Tensor result = state.output.detach();
  s.saved.emplace(microbatch, std::move(state));
  return result;
}

Status StageModule::DropActivations(MicrobatchId microbatch) {
  Impl& s = *impl_;
  auto it = s.saved.find(microbatch);
  if (it == s.saved.end() || !it->second.output.defined()) {
    return Status::FailedPrecondition(s.StageWhere() + ": DROP of microbatch " +
                                      std::to_string(microbatch) + " needs its F to have run, and no DROP since");
  }
  if (it->second.offload != nullptr && it->second.offload->offloaded()) {
    // Both free the activations: doing both would count the saving twice.
    return Status::FailedPrecondition(s.StageWhere() + ": DROP of microbatch " +
                                      std::to_string(microbatch) +
                                      " after its OFFLOAD; a schedule either offloads a microbatch's activations "
                                      "(OFFLOAD, RELOAD) or drops them (DROP, RECOMPUTE), not both");
  }
  it->second.output = at::Tensor();  // the graph and every activation it saved
  it->second.offload.reset();
  return Status::Ok();
}

Status StageModule::Recompute(MicrobatchId microbatch) {
  Impl& s = *impl_;
  auto it = s.saved.find(microbatch);
  if (it == s.saved.end() || it->second.output.defined()) {
    return Status::FailedPrecondition(s.StageWhere() + ": RECOMPUTE of microbatch " +
                                      std::to_string(microbatch) + " needs a DROP after its F first");
  }
  MicrobatchState& state = it->second;
  if (state.dropout_state.defined()) {
    // Replay F's dropout masks, then leave the generator where it was, so
    // that later forwards draw what they would have drawn without recomputing.
    at::Tensor now = s.dropout_gen.get_state();
    s.dropout_gen.set_state(state.dropout_state);
    s.RunForward(microbatch, state);
    s.dropout_gen.set_state(now);
  } else {
    s.RunForward(microbatch, state);
  }
  return Status::Ok();
}

void StageModule::SetOffloadedMicrobatches(std::set<MicrobatchId> microbatches, c10::Device host) {
  impl_->offloaded = std::move(microbatches);
  impl_->offload_host = host;
}

Status StageModule::OffloadActivations(MicrobatchId microbatch) {
  Impl& s = *impl_;
  const std::string where = s.StageWhere() + ": OFFLOAD of microbatch " + std::to_string(microbatch);
  auto it = s.saved.find(microbatch);
  if (it == s.saved.end()) return Status::FailedPrecondition(where + " needs its F to have run first");
  MicrobatchState& state = it->second;
  if (!state.output.defined()) {
    return Status::FailedPrecondition(where + " after its DROP: the activations are gone; a schedule either "
                                      "offloads a microbatch's activations or drops them, not both");
  }
  if (state.offload == nullptr) {
    return Status::FailedPrecondition(
        where + ": its F ran without registering the tensors it saved; call SetOffloadedMicrobatches with "
        "this microbatch before its F (the executor does it for every OFFLOAD in its program)");
  }
  if (state.offload->offloaded()) {
    return Status::FailedPrecondition(where + ": already offloaded; RELOAD must run before another OFFLOAD");
  }
  s.offload_counters.bytes_offloaded += state.offload->Offload(s.offload_host);
  ++s.offload_counters.offloads;
  return Status::Ok();
}

Status StageModule::ReloadActivations(MicrobatchId microbatch) {
  Impl& s = *impl_;
  auto it = s.saved.find(microbatch);
  if (it == s.saved.end() || it->second.offload == nullptr || !it->second.offload->offloaded()) {
    return Status::FailedPrecondition(s.StageWhere() + ": RELOAD of microbatch " +
                                      std::to_string(microbatch) + " needs an OFFLOAD after its F first");
  }
  s.offload_counters.bytes_reloaded += it->second.offload->Reload();
  ++s.offload_counters.reloads;
  return Status::Ok();
}

const StageModule::OffloadCounters& StageModule::offload_counters() const { return impl_->offload_counters; }

Result<at::Tensor> StageModule::Backward(MicrobatchId microbatch, const at::Tensor& grad_output,
                                         bool split, char action) {
  Impl& s = *impl_;
  const std::string where = s.Where(action, microbatch);
  auto it = s.saved.find(microbatch);
  if (it == s.saved.end()) {
    return Status::FailedPrecondition(
        where + ": no forward state for microbatch " + std::to_string(microbatch) +
        (s.store.HasPending(microbatch) ? " (its backward already ran; W is next)"
                                        : " (F must run before its backward)"));
  }
  const at::Tensor& output = it->second.output;
  if (!output.defined()) {
    return Status::FailedPrecondition(where + ": microbatch " + std::to_string(microbatch) +
                                      "'s activations were dropped (DROP) and not recomputed; RECOMPUTE must "
                                      "run before its backward");
  }
  if (it->second.offload != nullptr && it->second.offload->offloaded()) {
    return Status::FailedPrecondition(where + ": microbatch " + std::to_string(microbatch) +
                                      "'s activations were offloaded (OFFLOAD) and not reloaded; RELOAD must "
                                      "run before its backward");
  }
  at::Tensor grad = grad_output;
  if (s.span.has_head) {
    if (!grad.defined()) {
      grad = at::ones_like(output);
    } else if (grad.numel() != 1) {
      return Status::InvalidArgument(where + ": the last stage's grad_output scales the loss "
                                     "and must have one element, got " + Shape(grad));
    } else {
      grad = grad.to(output.scalar_type()).reshape(output.sizes());
    }
  } else if (!grad.defined() || grad.sizes() != output.sizes() ||
             grad.scalar_type() != output.scalar_type()) {
    return Status::InvalidArgument(where + ": grad_output is " + Shape(grad) +
                                   "; expected the shape of this stage's output " +
                                   Shape(output));
  }
  MicrobatchState state = std::move(it->second);
  s.saved.erase(it);
  {
    std::optional<WeightGradStore::DeferScope> defer;
    if (split) defer.emplace(s.store, microbatch);
    // retain_graph = false: LibTorch frees the graph's saved activations.
    torch::autograd::backward({state.output}, {grad});
  }
  if (!state.input_leaf.defined()) return at::Tensor();
  at::Tensor grad_input = state.input_leaf.grad();
  if (!grad_input.defined()) grad_input = at::zeros_like(state.input_leaf);
  return grad_input;
}

Result<at::Tensor> StageModule::BackwardFull(MicrobatchId microbatch,
                                             const at::Tensor& grad_output) {
  return Backward(microbatch, grad_output, /*split=*/false, 'B');
}

Result<at::Tensor> StageModule::BackwardInput(MicrobatchId microbatch,
                                              const at::Tensor& grad_output) {
  return Backward(microbatch, grad_output, /*split=*/true, 'I');
}

Status StageModule::BackwardWeight(MicrobatchId microbatch) {
  Impl& s = *impl_;
  if (s.saved.count(microbatch) > 0) {
    return Status::FailedPrecondition(s.Where('W', microbatch) + ": I for microbatch " +
                                      std::to_string(microbatch) + " has not run yet");
  }
  s.store.Run(microbatch);
  return Status::Ok();
}

Result<at::Tensor> StageModule::Evaluate(const at::Tensor& input, const at::Tensor& targets) {
  Impl& s = *impl_;
  PW_RETURN_IF_ERROR(s.CheckInputs(input, targets)
                         .WithContext("stage " + std::to_string(s.span.stage) + ", evaluate"));
  at::NoGradGuard no_grad;
  ForwardContext ctx;  // no store, no dropout
  return s.segment->Forward(input, targets, ctx);
}

int StageModule::HeldMicrobatches() const {
  std::set<MicrobatchId> held;
  for (const auto& [microbatch, state] : impl_->saved) held.insert(microbatch);
  for (MicrobatchId microbatch : impl_->store.PendingMicrobatches()) held.insert(microbatch);
  return static_cast<int>(held.size());
}

bool StageModule::IsHeld(MicrobatchId microbatch) const {
  return impl_->saved.count(microbatch) > 0 || impl_->store.HasPending(microbatch);
}

int StageModule::PendingWeightGradClosures(MicrobatchId microbatch) const {
  return impl_->store.PendingClosures(microbatch);
}

void StageModule::DiscardAll() {
  impl_->saved.clear();
  for (MicrobatchId microbatch : impl_->store.PendingMicrobatches()) {
    impl_->store.Discard(microbatch);
  }
}

std::vector<at::Tensor> StageModule::Parameters() const {
  return impl_->segment->parameters();
}

at::Tensor StageModule::TiedWeight() const { return impl_->segment->TiedWeight(); }

std::vector<std::pair<std::string, at::Tensor>> StageModule::NamedParameters() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& item : impl_->segment->named_parameters()) {
    out.emplace_back(item.key(), item.value());
  }
  return out;
}

void StageModule::ZeroGrad() {
  for (at::Tensor& p : impl_->segment->parameters()) p.mutable_grad() = at::Tensor();
}

void StageModule::SetGradAccumulatedCallback(GradAccumulated callback) {
  Impl& s = *impl_;
  if (s.accumulators.empty() && callback) {  // first use: hook every parameter once
    std::vector<at::Tensor> params = Parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      s.param_index.emplace(params[i].unsafeGetTensorImpl(), i);
      std::shared_ptr<torch::autograd::Node> accumulator = torch::autograd::impl::grad_accumulator(params[i]);
      accumulator->add_post_hook(std::make_unique<AccumulatedPostHook>(&s.grad_accumulated, i));
      s.accumulators.push_back(std::move(accumulator));
    }
    s.store.SetAccumulatedHook([&s](const void* parameter) { s.OnAccumulated(parameter); });
  }
  s.grad_accumulated = std::move(callback);
}

void StageModule::SetTraining(bool training) {
  impl_->training = training;
  impl_->segment->train(training);
}

torch::nn::Module& StageModule::module() { return *impl_->segment; }

}  // namespace pw
