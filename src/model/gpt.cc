#include "model/gpt.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <string>

namespace pw {
namespace {

at::Tensor Normal(std::vector<int64_t> shape, double std, at::Generator& gen) {
  return at::empty(shape, at::kFloat).normal_(0.0, std, gen);
}

// The token embedding's init: the first draw of unit 0's generator, so a
// head stage's copy of a tied embedding starts bit-identical to it.
at::Tensor TokenEmbeddingInit(const ModelConfig& config, at::Generator& gen) {
  return Normal({config.vocab_size, config.d_model}, config.init_std, gen);
}

}  // namespace

uint64_t UnitSeed(uint64_t seed, int unit) {
  // SplitMix64 over seed and unit: independent-looking streams per unit.
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(unit + 1) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

LinearImpl::LinearImpl(int64_t in, int64_t out, bool with_bias, double init_std,
                       at::Generator& gen) {
  weight = register_parameter("weight", Normal({out, in}, init_std, gen));
  if (with_bias) bias = register_parameter("bias", at::zeros({out}));
}

at::Tensor LinearImpl::Forward(const at::Tensor& x, const ForwardContext& ctx) const {
  return ApplyLinear(x, weight, bias, ctx);
}

NormImpl::NormImpl(int64_t width, const BlockSpec& spec) : spec_(spec) {
  weight = register_parameter("weight", at::ones({width}));
  if (!spec.rms_norm) bias = register_parameter("bias", at::zeros({width}));
}

at::Tensor NormImpl::Forward(const at::Tensor& x) const {
  return Norm(spec_, x, weight, bias);
}

EmbeddingUnit::EmbeddingUnit(const ModelConfig& config, at::Generator& gen)
    : dropout_(config.dropout) {
  tok_emb = register_parameter("tok_emb", TokenEmbeddingInit(config, gen));
  if (!config.rope()) {
    pos_emb = register_parameter("pos_emb", Normal({config.seq_len, config.d_model}, config.init_std, gen));
  }
}

at::Tensor EmbeddingUnit::Forward(const at::Tensor& tokens, const ForwardContext& ctx) const {
  const int64_t t = tokens.size(1);
  const at::Tensor positions = pos_emb.defined() ? pos_emb.narrow(0, 0, t) : at::Tensor();
  return Dropout(EmbedTokens(tok_emb, tokens, positions), dropout_, ctx);
}

Block::Block(const ModelConfig& config, at::Generator& gen) : spec_(BlockSpecOf(config)) {
  const int64_t d = config.d_model, h = config.ffn_width();
  const double residual_std = config.init_std / std::sqrt(2.0 * config.n_layers);
  ln1_ = register_module("ln1", std::make_shared<NormImpl>(d, spec_));
  auto attn = register_module("attn", std::make_shared<torch::nn::Module>());
  qkv_ = attn->register_module("qkv", std::make_shared<LinearImpl>(d, config.qkv_width(), config.has_qkv_bias(),
                                                                   config.init_std, gen));
  attn_proj_ = attn->register_module(
      "proj", std::make_shared<LinearImpl>(d, d, config.bias, residual_std, gen));
  ln2_ = register_module("ln2", std::make_shared<NormImpl>(d, spec_));
  auto mlp = register_module("mlp", std::make_shared<torch::nn::Module>());
  // SwiGLU: gate and up in one weight (one GEMM), gate rows first.
  fc_ = mlp->register_module("fc", std::make_shared<LinearImpl>(d, config.mlp_up_width(), config.bias,
                                                                config.init_std, gen));
  mlp_proj_ = mlp->register_module(
      "proj", std::make_shared<LinearImpl>(h, d, config.bias, residual_std, gen));
}

at::Tensor Block::Forward(const at::Tensor& x, const ForwardContext& ctx) const {
  const BlockTensors tensors{
      .ln1_weight = ln1_->weight, .ln1_bias = ln1_->bias,
      .qkv_weight = qkv_->weight, .qkv_bias = qkv_->bias,
      .proj_weight = attn_proj_->weight, .proj_bias = attn_proj_->bias,
      .ln2_weight = ln2_->weight, .ln2_bias = ln2_->bias,
      .fc_weight = fc_->weight, .fc_bias = fc_->bias,
      .mlp_weight = mlp_proj_->weight, .mlp_bias = mlp_proj_->bias};
  return BlockForward(tensors, spec_, x, ctx);
}

HeadUnit::HeadUnit(const ModelConfig& config, at::Generator& gen, const at::Tensor* tied, at::Tensor tied_copy)
    : tied_(tied), spec_(BlockSpecOf(config)) {
  ln_ = register_module("ln", std::make_shared<NormImpl>(config.d_model, spec_));
  if (tied_copy.defined()) tied_weight = register_parameter("tied_weight", std::move(tied_copy));
  if (!config.tie_embeddings) {
    lm_head_ = register_module("lm_head", std::make_shared<LinearImpl>(config.d_model, config.vocab_size,
                                                                       /*bias=*/false, config.init_std, gen));
  }
}

at::Tensor HeadUnit::Logits(const at::Tensor& x, const ForwardContext& ctx) const {
  PW_CHECK(lm_head_ || tied_ != nullptr || tied_weight.defined(),
           "a tied head built without its embedding copy (TiedHead::kNormOnly) has no weight");
  const at::Tensor& weight = tied_ != nullptr ? *tied_ : tied_weight.defined() ? tied_weight : lm_head_->weight;
  return HeadLogits(spec_, ln_->weight, ln_->bias, weight, x, ctx);
}

at::Tensor HeadUnit::Loss(const at::Tensor& x, const at::Tensor& targets,
                          const ForwardContext& ctx) const {
  at::Tensor logits = Logits(x, ctx);
  return at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
}

GptSegment::GptSegment(const ModelConfig& config, const StageSpan& span, uint64_t seed, TiedHead tied_head)
    : config_(config), span_(span) {
  PW_CHECK(ValidateModelConfig(config).ok(), ValidateModelConfig(config).ToString());
  PW_CHECK(span.first_block >= 0 && span.num_blocks >= 0 &&
               span.first_block + span.num_blocks <= config.n_layers,
           "stage span outside the model");
  PW_CHECK(span.num_blocks > 0 || span.has_embedding || span.has_head, "empty stage span");
  auto generator = [&](int unit) {
    return at::make_generator<at::CPUGeneratorImpl>(UnitSeed(seed, unit));
  };
  if (span.has_embedding) {
    at::Generator gen = generator(0);
    embed_ = register_module("embed", std::make_shared<EmbeddingUnit>(config, gen));
  }
  auto blocks = register_module("blocks", std::make_shared<torch::nn::Module>());
  for (int i = span.first_block; i < span.first_block + span.num_blocks; ++i) {
    at::Generator gen = generator(1 + i);
    blocks_.push_back(
        blocks->register_module(std::to_string(i), std::make_shared<Block>(config, gen)));
  }
  if (span.has_head) {
    at::Generator gen = generator(config.n_layers + 1);
    const at::Tensor* tied = config.tie_embeddings && embed_ ? &embed_->tok_emb : nullptr;
    at::Tensor copy;
    if (config.tie_embeddings && !embed_ && tied_head == TiedHead::kOwnCopy) {
      // The embedding is another stage's: this head keeps a copy drawn from
      // the embedding's own stream, so both start equal; training sums
      // their gradients every step so they stay equal (runtime/executor.cc, SyncTiedGrads).
      at::Generator embedding_gen = generator(0);
      copy = TokenEmbeddingInit(config, embedding_gen);
    }
    head_ = register_module("head", std::make_shared<HeadUnit>(config, gen, tied, std::move(copy)));
  }
  if (config.rope()) rotary_frequencies_ = RotaryFrequencies(config);
}

at::Tensor GptSegment::Trunk(const at::Tensor& input, const ForwardContext& ctx) const {
  at::Tensor h = embed_ ? embed_->Forward(input, ctx) : input;
  if (blocks_.empty()) return h;
  ForwardContext inner = ctx;
  RotaryAngles angles;
  if (rotary_frequencies_.defined()) {
    // Whole sequences: positions 0 .. T-1, the same for every block.
    angles = RotaryAnglesAt(rotary_frequencies_, at::arange(h.size(1), at::kLong));
    inner.rotary = &angles;
  }
  for (const auto& block : blocks_) h = block->Forward(h, inner);
  return h;
}

at::Tensor GptSegment::Forward(const at::Tensor& input, const at::Tensor& targets,
                               const ForwardContext& ctx) const {
  at::Tensor h = Trunk(input, ctx);
  return head_ ? head_->Loss(h, targets, ctx) : h;
}

at::Tensor GptSegment::ForwardLogits(const at::Tensor& input, const ForwardContext& ctx) const {
  at::Tensor h = Trunk(input, ctx);
  return head_ ? head_->Logits(h, ctx) : h;
}

at::Tensor GptSegment::TiedWeight() const {
  if (!config_.tie_embeddings) return at::Tensor();
  if (embed_) return embed_->tok_emb;
  return head_ ? head_->tied_weight : at::Tensor();
}

StageSpan WholeModelSpan(const ModelConfig& config) {
  StageSpan span;
  span.stage = 0;
  span.first_block = 0;
  span.num_blocks = config.n_layers;
  span.has_embedding = true;
  span.has_head = true;
  return span;
}

}  // namespace pw
