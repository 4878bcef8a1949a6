// ModelWeights: the decoder's parameters as plain tensors for inference, and
// one transformer block's weights as a unit that the weight pool moves
// between ranks (packed into one flat float32 tensor).
//
// Sources: a training checkpoint directory (model/checkpoint.h: manifest +
// stage_<s>.safetensors with "param/<name>", names partition-independent,
// see model/gpt.h), a Hugging Face model directory (model/hf_checkpoint.h:
// only the kept blocks' tensors are read), or the deterministic random init
// of a ModelConfig and seed (the same parameters `pipewright train` starts
// from). Only the
// blocks in `keep_blocks` are materialised; the embedding and the head are
// always held (they are small for byte-level vocabularies and every rank
// needs them every step).
//
// Thread-safety: plain values; LoadModelWeights has no shared state.
// Failure: Status naming the directory, file and tensor.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "model/gpt_math.h"
#include "model/model_config.h"

namespace pw {
class GptSegment;
}  // namespace pw

namespace pw {

// One block's parameters (model/gpt.h Block). A bias is an undefined tensor
// where the config gives the block none (bias = false; RMSNorm).
struct BlockWeights {
  at::Tensor ln1_weight, ln1_bias;
  at::Tensor qkv_weight, qkv_bias;    // [d + 2 kv_width, d], [d + 2 kv_width]
  at::Tensor proj_weight, proj_bias;  // [d, d], [d]
  at::Tensor ln2_weight, ln2_bias;
  at::Tensor fc_weight, fc_bias;      // [h, d], [h]; SwiGLU: [2h, d], gate rows first
  at::Tensor mlp_weight, mlp_bias;    // [d, h], [d]   ("mlp.proj")
  BlockSpec spec;                     // the family's arithmetic (UnpackBlock sets it)
  // True when the four linear weights (qkv, proj, fc, mlp) hold this CPU's
  // prepacked kernel layout (infer/prepacked_linear.h), as 1-D tensors of
  // out * in values, so that code reading them as [out, in] fails on the
  // shape instead of computing with scrambled numbers. Only
  // infer/layer_math.h computes with them; they are never saved, and sent
  // only to ranks that reported the same layout (PoolOptions::blocks_prepacked).
  bool prepacked = false;
  bool defined() const { return qkv_weight.defined(); }
};

// Number of float32 values of one block, and its packed layout size in bytes.
int64_t BlockParamCount(const ModelConfig& config);
inline int64_t BlockBytes(const ModelConfig& config) { return BlockParamCount(config) * 4; }

// Packs into a new contiguous 1-D float32 tensor of BlockParamCount values,
// in the field order above (biases skipped when bias = false).
at::Tensor PackBlock(const BlockWeights& block);
// Views into `flat` (not copies): `flat` must be a contiguous 1-D float32
// tensor of BlockParamCount(config) values (PW_CHECK). `prepacked`: `flat`
// came from PackBlock of a prepacked block (the linears' views stay 1-D
// and the result is marked prepacked).
BlockWeights UnpackBlock(const at::Tensor& flat, const ModelConfig& config, bool prepacked = false);

struct ModelWeights {
  ModelConfig config;
  at::Tensor tok_emb, pos_emb;           // [vocab, d], [seq_len, d] (undefined with rope)
  std::vector<BlockWeights> blocks;      // size n_layers; undefined where not kept
  at::Tensor head_ln_weight, head_ln_bias, lm_head;  // lm_head [vocab, d]: tok_emb itself when tied
  at::Tensor rotary_frequencies;         // rope: RotaryFrequencies(config), computed once at load
  // Bytes of every defined tensor above (what this rank holds for weights).
  int64_t HeldBytes() const;
  // Bytes of embedding + head only.
  int64_t SharedBytes() const;
};

struct WeightSource {
  std::string checkpoint_dir;  // non-empty: load from this checkpoint
  ModelConfig config;          // otherwise: random init of this config
  uint64_t seed = 1234;        // (the trainer's default seed)
  std::string hf_dir;          // non-empty: load this Hugging Face directory (config: its config.json)
};

// The model config a source describes (the checkpoint's manifest, or
// source.config). Blocks on file I/O for a checkpoint.
Result<ModelConfig> SourceConfig(const WeightSource& source);

// Loads the embedding, the head and the blocks whose index is in
// `keep_blocks` (all blocks when `keep_all`). Blocks on file I/O or init.
// NotFound / InvalidArgument naming file and tensor for a bad checkpoint.
Result<ModelWeights> LoadModelWeights(const WeightSource& source,
                                      const std::vector<int>& keep_blocks,
                                      bool keep_all = false);

// Every defined tensor of `weights` under its model/gpt.h parameter name
// ("embed.tok_emb", "blocks.3.attn.qkv.weight", "head.lm_head.weight", ...):
// the bridge to GptSegment::named_parameters() (the reference forward) and
// to checkpoints. The tensors are the held ones, not copies. Pure.
std::vector<std::pair<std::string, at::Tensor>> NamedWeights(const ModelWeights& weights);

// The whole model of `source` as one GptSegment (model/gpt.h), the training
// code's own forward: the reference that inference is checked against, and
// what `pipewright eval` scores with. Blocks on file I/O or init; the
// checkpoint's errors as LoadModelWeights.
Result<std::unique_ptr<GptSegment>> LoadWholeModel(const WeightSource& source);

}  // namespace pw
