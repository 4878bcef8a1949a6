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

// How the linear weights of a block (and the head) are held for compute.
// The values are part of the shared-memory pool's header: append only.
enum class LinearLayout : int32_t {
  kPlain = 0,   // [out, in] as nn.Linear holds it: LibTorch's linear (OpenBLAS)
  kOneDnn = 1,  // oneDNN's packed layout for this CPU (infer/prepacked_linear.h)
  kPanels = 2,  // pipewright's panels (model/panel_linear.h): one summation
                // order per element, batch invariant, the same on every machine
};
// "plain", "prepacked" (oneDNN: the --weights-layout name), "panels".
const char* LinearLayoutName(LinearLayout layout);

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
  // The layout of the four linear weights (qkv, proj, fc, mlp). Packed
  // ones (not kPlain) are 1-D tensors of out * in values, so that code
  // reading them as [out, in] fails on the shape instead of computing with
  // scrambled numbers. Only infer/layer_math.h computes with them; they are
  // never saved, and sent only to ranks that hold the same layout
  // (PoolOptions::blocks_layout).
  LinearLayout layout = LinearLayout::kPlain;
  bool defined() const { return qkv_weight.defined(); }
};

// Number of float32 values of one block, and its packed layout size in bytes.
int64_t BlockParamCount(const ModelConfig& config);
inline int64_t BlockBytes(const ModelConfig& config) { return BlockParamCount(config) * 4; }

// Packs into a new contiguous 1-D float32 tensor of BlockParamCount values,
// in the field order above (biases skipped when bias = false).
at::Tensor PackBlock(const BlockWeights& block);
// Views into `flat` (not copies): `flat` must be a contiguous 1-D float32
// tensor of BlockParamCount(config) values (PW_CHECK). `layout`: that of
// the block `flat` came from (PackBlock); packed linears' views stay 1-D.
BlockWeights UnpackBlock(const at::Tensor& flat, const ModelConfig& config,
                         LinearLayout layout = LinearLayout::kPlain);

struct ModelWeights {
  ModelConfig config;
  at::Tensor tok_emb, pos_emb;           // [vocab, d], [seq_len, d] (undefined with rope)
  std::vector<BlockWeights> blocks;      // size n_layers; undefined where not kept
  at::Tensor head_ln_weight, head_ln_bias, lm_head;  // lm_head [vocab, d]: tok_emb itself when tied
  // kPanels: lm_head is held in the panel layout (1-D, vocab * d values),
  // and so is tok_emb when tied (the embedding reads its rows from there).
  LinearLayout head_layout = LinearLayout::kPlain;
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
