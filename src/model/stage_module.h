// StageModule: one virtual stage of the GPT decoder as the executor drives it,
// one schedule action at a time:
//
//   F  Forward(mb, input, targets)   stage 0 takes token ids, the last stage
//                                    returns the loss; others map hidden states
//   B  BackwardFull(mb, grad_output) input and weight gradients at once
//   I  BackwardInput(mb, grad_output) input gradients only; weight-gradient
//                                    work is queued in the stage's WeightGradStore
//   W  BackwardWeight(mb)            runs that queued work
//   DROP       DropActivations(mb)   frees F's activations, keeps its input
//   RECOMPUTE  Recompute(mb)         runs F again to rebuild them before B/I
//   OFFLOAD    OffloadActivations(mb) moves them to host memory
//   RELOAD     ReloadActivations(mb)  brings them back before B/I
//
// Per-microbatch state: F keeps the stage's autograd graph (its activations)
// and a detached copy of its input that requires grad (the stage boundary);
// B or I frees the graph (LibTorch drops saved tensors after backward) and the
// input; after I what W needs — each Linear's input and output gradient —
// lives in the store until W frees it. HeldMicrobatches() counts microbatches
// with any state left.
//
// Gradients accumulate into the parameters' .grad across microbatches, as in
// single-process training; ZeroGrad() clears them. The last stage's loss is a
// microbatch mean; to train on the mean over m microbatches pass
// grad_output = 1/m to its backward.
//
// Where each gradient is computed with split backward: I computes dX through
// every layer (the dX GEMMs, the attention matmuls and softmax, GELU, the
// residual adds), and also the LayerNorm weight/bias and embedding gradients
// (autograd accumulates them as it passes; they are elementwise or a scatter
// add, cheap next to a GEMM). W computes dW = dYᵀ·X and db = ΣdY of every
// Linear (qkv, attention output, MLP up and down, LM head): all weight GEMMs.
//
// Thread-safety: not thread-safe; one thread (the rank's executor) calls it.
// Failure: misuse that a schedule can cause (I before F, F twice for one
// microbatch, wrong shapes) returns a Status naming the stage, action and
// microbatch; LibTorch errors (c10::Error) propagate to the executor.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/ids.h"
#include "core/status.h"
#include "model/model_config.h"
#include "model/partitioner.h"

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace pw {

class StageModule {
 public:
  // Builds the stage's layers with the deterministic init of the whole model
  // (see model/gpt.h: the same seed gives the same parameters whatever the
  // partition). `config` must be valid and `span` from a ModelPartition of it
  // (PW_CHECK). `dropout_seed` seeds this stage's dropout generator (only
  // used when config.dropout > 0 in training mode).
  StageModule(const ModelConfig& config, const StageSpan& span, uint64_t seed,
              uint64_t dropout_seed = 0);
  ~StageModule();
  StageModule(const StageModule&) = delete;
  StageModule& operator=(const StageModule&) = delete;

  StageId stage() const;
  const StageSpan& span() const;
  bool is_first() const;  // holds the embedding: Forward takes token ids
  bool is_last() const;   // holds the head: Forward takes targets, returns the loss

  // F. `input`: int64 token ids [B, T] (first stage) or float [B, T, d_model]
  // (the previous stage's output); T <= seq_len. `targets`: int64 [B, T],
  // required on the last stage, ignored elsewhere. Returns the output without
  // its graph: hidden [B, T, d_model], or the scalar loss on the last stage.
  // `input` is kept, not copied, until this microbatch's backward: do not
  // write into it (e.g. reuse it as a receive buffer) before then; likewise
  // the returned tensor shares memory with the stage's graph.
  // FailedPrecondition if `microbatch` already has state; InvalidArgument for
  // a wrong dtype/shape. Blocks while computing.
  Result<at::Tensor> Forward(MicrobatchId microbatch, const at::Tensor& input,
                             const at::Tensor& targets = {});

  // B: backpropagates `grad_output` (d objective / d output: [B, T, d_model],
  // or on the last stage a one-element scale for the loss, undefined = 1)
  // through the stage, accumulating every parameter's .grad, and frees the
  // microbatch's state. Returns d objective / d input, or an undefined tensor
  // on the first stage (token ids have no gradient). FailedPrecondition if
  // Forward(microbatch) has not run (or its backward already has).
  Result<at::Tensor> BackwardFull(MicrobatchId microbatch, const at::Tensor& grad_output);

  // I: as BackwardFull, but every Linear's weight and bias gradients are
  // queued, not computed; LayerNorm and embedding gradients are computed.
  // The microbatch stays held until BackwardWeight.
  Result<at::Tensor> BackwardInput(MicrobatchId microbatch, const at::Tensor& grad_output);

  // W: computes the queued weight gradients of `microbatch` into .grad and
  // frees what they held. FailedPrecondition if its I has not run yet; OK and
  // no work if there is nothing queued (after B, or a stage without Linears).
  Status BackwardWeight(MicrobatchId microbatch);

  // DROP: frees the activations F saved for `microbatch` (its autograd
  // graph), keeping only what F needs to run again: its input, targets and
  // dropout state. The microbatch stays held. FailedPrecondition unless F
  // ran and nothing was dropped since.
  Status DropActivations(MicrobatchId microbatch);

  // RECOMPUTE: runs F of `microbatch` again on the kept input, with the same
  // dropout masks, rebuilding the activations its backward needs; the
  // gradients then equal those without DROP, bit for bit, and the dropout
  // generator ends where it was. FailedPrecondition unless DROP ran.
  // Blocks while computing.
  Status Recompute(MicrobatchId microbatch);

  // OFFLOAD/RELOAD setup (model/activation_offload.h): F (and RECOMPUTE) of
  // these microbatches registers the tensors its graph saves so that OFFLOAD
  // can move them to `host`; every other microbatch runs as before. Applies
  // to forwards that start after the call; set it between steps.
  void SetOffloadedMicrobatches(std::set<MicrobatchId> microbatches, c10::Device host = c10::kCPU);

  // OFFLOAD: copies the activations F saved for `microbatch` (not the
  // parameters, nor its input and targets) into fresh buffers on the host
  // device and frees the device copies. FailedPrecondition unless F ran for
  // a microbatch given to SetOffloadedMicrobatches, was not dropped, and is
  // not offloaded already. Blocks for the copy.
  Status OffloadActivations(MicrobatchId microbatch);

  // RELOAD: copies them back to the device they came from; the backward
  // then gives the gradients of a run without offload, bit for bit (B or I
  // while offloaded is refused). FailedPrecondition unless OFFLOAD ran and
  // no RELOAD since. Blocks for the copy.
  Status ReloadActivations(MicrobatchId microbatch);

  // What OFFLOAD and RELOAD moved since the stage was built.
  struct OffloadCounters {
    int64_t offloads = 0, reloads = 0;
    int64_t bytes_offloaded = 0, bytes_reloaded = 0;
  };
  const OffloadCounters& offload_counters() const;

  // Forward without autograd and without keeping state (validation):
  // the loss on the last stage, else the hidden state. Dropout is off.
  Result<at::Tensor> Evaluate(const at::Tensor& input, const at::Tensor& targets = {});

  // Microbatches with saved state (after F, until B, or until W after I).
  int HeldMicrobatches() const;
  bool IsHeld(MicrobatchId microbatch) const;
  // Queued weight-gradient closures of one microbatch (0 when none).
  int PendingWeightGradClosures(MicrobatchId microbatch) const;
  // Drops every microbatch's state without computing anything (after a failure).
  void DiscardAll();

  // Parameters in a stable order (for optimizers), and with names that do not
  // depend on the partition (for checkpoints), e.g. "blocks.3.mlp.fc.weight".
  std::vector<at::Tensor> Parameters() const;
  std::vector<std::pair<std::string, at::Tensor>> NamedParameters() const;
  // A tied model's embedding weight as this stage holds it: the embedding
  // (first stage) or the head's copy of it (last stage, without the
  // embedding); undefined otherwise. Training sums the two owners'
  // gradients every step (runtime/executor.cc SyncTiedGrads).
  at::Tensor TiedWeight() const;
  // Sets every parameter's .grad to undefined.
  void ZeroGrad();

  // `callback(i)` runs each time Parameters()[i].grad has taken a
  // contribution: autograd's accumulation in B and I, the queued
  // weight-gradient work in W. It runs on the thread that computed it (the
  // caller's, for CPU tensors), inside the backward: keep it short. For a
  // data-parallel all-reduce that starts as soon as a gradient is final.
  // An empty callback (the default) turns it off; set it between actions.
  using GradAccumulated = std::function<void(size_t param_index)>;
  void SetGradAccumulatedCallback(GradAccumulated callback);
  // Training mode enables dropout (config.dropout > 0). Default: training.
  void SetTraining(bool training);

  // The underlying module (for code that needs torch::nn APIs).
  torch::nn::Module& module();

 private:
  struct Impl;
  Result<at::Tensor> Backward(MicrobatchId microbatch, const at::Tensor& grad_output,
                              bool split, char action);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pw
