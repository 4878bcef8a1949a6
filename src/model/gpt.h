// The GPT-style decoder, as LibTorch modules.
//
// A model is a sequence of units: EmbeddingUnit (token embeddings, plus a
// learned position table unless the model uses rotary embeddings), n_layers
// Blocks (pre-norm: x + Attn(Norm(x)), then x + MLP(Norm(x)); the family's
// norm, positions, MLP and key/value heads are data, model/gpt_math.h
// BlockSpec) and HeadUnit (final norm, the LM head — its own weight, or
// the token embedding when tie_embeddings — and the mean cross-entropy of
// the next token). GptSegment holds a contiguous run of units — a pipeline stage,
// or the whole model — so that the single-process model and the stages are
// built from the same code.
//
// The modules hold the parameters; the arithmetic is model/gpt_math.h's,
// shared with inference. Every Linear goes through SplitLinear when
// ForwardContext::store is set (split backward, see model/split_linear.h);
// with store == nullptr it is plain torch::nn::functional::linear, which
// makes the whole model an autograd-only reference.
//
// Deterministic init: each unit draws from its own generator seeded by
// UnitSeed(seed, unit), so a stage built alone has exactly the parameters of
// the same layers in the whole model, whatever the partition.
//
// Parameter names do not depend on the partition: "embed.tok_emb",
// "embed.pos_emb", "blocks.<i>.ln1.weight", "blocks.<i>.attn.qkv.weight", ...,
// "head.ln.weight", "head.lm_head.weight" (i is the global block index). A
// tied model has no head.lm_head: the head uses embed.tok_emb when the
// embedding is in its segment, else its own copy "head.tied_weight", which
// starts equal to the embedding and is kept equal by training (the two
// owners sum their gradients every step: runtime/executor.cc, SyncTiedGrads).
//
// Thread-safety: a module may be used by one thread at a time.
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "model/gpt_math.h"
#include "model/model_config.h"
#include "model/partitioner.h"
#include "model/weight_grad_store.h"

namespace pw {

// Seed of unit u (0 = embedding, 1..n = blocks, n + 1 = head) for model seed
// `seed` (SplitMix64 of both).
uint64_t UnitSeed(uint64_t seed, int unit);

// y = x·Wᵀ + b; weight [out, in], bias [out] (optional).
class LinearImpl : public torch::nn::Module {
 public:
  LinearImpl(int64_t in, int64_t out, bool bias, double init_std, at::Generator& gen);
  at::Tensor Forward(const at::Tensor& x, const ForwardContext& ctx) const;

  at::Tensor weight;
  at::Tensor bias;  // undefined when built without bias
};

// LayerNorm (weight, bias) or RMSNorm (weight), as the spec says.
class NormImpl : public torch::nn::Module {
 public:
  NormImpl(int64_t width, const BlockSpec& spec);
  at::Tensor Forward(const at::Tensor& x) const;

  at::Tensor weight;
  at::Tensor bias;  // undefined for RMSNorm

 private:
  BlockSpec spec_;
};

class EmbeddingUnit : public torch::nn::Module {
 public:
  EmbeddingUnit(const ModelConfig& config, at::Generator& gen);
  // tokens: int64 [B, T], T <= seq_len. Returns [B, T, d_model].
  at::Tensor Forward(const at::Tensor& tokens, const ForwardContext& ctx) const;

  at::Tensor tok_emb;  // [vocab_size, d_model]
  at::Tensor pos_emb;  // [seq_len, d_model]; undefined with rotary positions

 private:
  double dropout_;
};

class Block : public torch::nn::Module {
 public:
  Block(const ModelConfig& config, at::Generator& gen);
  // x: [B, T, d_model] -> [B, T, d_model].
  at::Tensor Forward(const at::Tensor& x, const ForwardContext& ctx) const;

 private:
  BlockSpec spec_;
  std::shared_ptr<NormImpl> ln1_, ln2_;
  std::shared_ptr<LinearImpl> qkv_, attn_proj_, fc_, mlp_proj_;
};

class HeadUnit : public torch::nn::Module {
 public:
  // `tied`: the token embedding the head uses as its weight when the model
  // ties them and the embedding is in the same segment (it outlives the
  // head). `tied_copy`: when it is not, the head's own copy of it, a
  // parameter named "tied_weight". Neither, for a tied model: the norm only
  // (inference's per-unit init; Logits then fails a check).
  HeadUnit(const ModelConfig& config, at::Generator& gen, const at::Tensor* tied = nullptr,
           at::Tensor tied_copy = at::Tensor());
  // x: [B, T, d_model] -> logits [B, T, vocab_size].
  at::Tensor Logits(const at::Tensor& x, const ForwardContext& ctx) const;
  // Mean cross-entropy of logits against targets (int64 [B, T]); a scalar.
  at::Tensor Loss(const at::Tensor& x, const at::Tensor& targets, const ForwardContext& ctx) const;

  at::Tensor tied_weight;  // the tied embedding's copy, when the embedding is elsewhere (else undefined)

 private:
  std::shared_ptr<NormImpl> ln_;
  std::shared_ptr<LinearImpl> lm_head_;  // null when tied
  const at::Tensor* tied_ = nullptr;
  BlockSpec spec_;
};

// A contiguous run of units (a pipeline stage, or the whole model).
class GptSegment : public torch::nn::Module {
 public:
  // What the head of a tied model holds when the embedding is not in the
  // same segment: its own copy of the embedding (training: a pipeline stage
  // that keeps the tie by summing gradients), or its norm only (inference,
  // which uses the embedding it already holds).
  enum class TiedHead { kOwnCopy, kNormOnly };

  // Builds the units of `span` with parameters drawn from UnitSeed(seed, u).
  // The config must be valid (PW_CHECK) and the span inside it.
  GptSegment(const ModelConfig& config, const StageSpan& span, uint64_t seed,
             TiedHead tied_head = TiedHead::kOwnCopy);

  // input: token ids int64 [B, T] if span.has_embedding, else hidden
  // [B, T, d_model]. Returns the mean loss (scalar) if span.has_head —
  // targets int64 [B, T] required — else the hidden state [B, T, d_model].
  at::Tensor Forward(const at::Tensor& input, const at::Tensor& targets,
                     const ForwardContext& ctx) const;

  // As Forward, but a head returns the logits [B, T, vocab] (no targets).
  at::Tensor ForwardLogits(const at::Tensor& input, const ForwardContext& ctx) const;

  const ModelConfig& config() const { return config_; }
  const StageSpan& span() const { return span_; }

  // A tied model's embedding weight as this segment holds it: embed.tok_emb
  // where the embedding is, the head's copy (head.tied_weight) where only
  // the head is; undefined otherwise (untied, or neither end here).
  at::Tensor TiedWeight() const;

 private:
  at::Tensor Trunk(const at::Tensor& input, const ForwardContext& ctx) const;

  ModelConfig config_;
  StageSpan span_;
  at::Tensor rotary_frequencies_;          // rope models: RotaryFrequencies(config)
  std::shared_ptr<EmbeddingUnit> embed_;   // null unless span_.has_embedding
  std::vector<std::shared_ptr<Block>> blocks_;
  std::shared_ptr<HeadUnit> head_;         // null unless span_.has_head
};

// The span of the whole model (one stage holding every unit).
StageSpan WholeModelSpan(const ModelConfig& config);


}  // namespace pw
