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
#include <functional>
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

// The number format linear weights are held in (--weights). fp32 in every
// layout; bf16 and int8 in panels only (model/panel_linear.h: bf16 widened
// exactly, int8 per output channel with fp32 scales). Norms, biases and
// scales stay fp32. The values are part of the shared-memory pool's header
// and of the wire: append only.
enum class WeightFormat : int32_t {
  kFp32 = 0,
  kBf16 = 1,
  kInt8 = 2,
};
// "fp32", "bf16", "int8" (the --weights names), and back: InvalidArgument
// naming the choices for any other name.
const char* WeightFormatName(WeightFormat format);
Result<WeightFormat> ParseWeightFormat(const std::string& name);
// Bytes per linear weight value.
int64_t WeightFormatBytes(WeightFormat format);

// One block's parameters (model/gpt.h Block). A bias is an undefined tensor
// where the config gives the block none (bias = false; RMSNorm).
struct BlockWeights {
  at::Tensor ln1_weight, ln1_bias;
  at::Tensor qkv_weight, qkv_bias;    // [d + 2 kv_width, d], [d + 2 kv_width]
  at::Tensor proj_weight, proj_bias;  // [d, d], [d]
  at::Tensor ln2_weight, ln2_bias;
  at::Tensor fc_weight, fc_bias;      // [h, d], [h]; SwiGLU: [2h, d], gate rows first
  at::Tensor mlp_weight, mlp_bias;    // [d, h], [d]   ("mlp.proj")
  // int8: each linear's per-output scales, fp32 [out]; undefined otherwise.
  at::Tensor qkv_scale, proj_scale, fc_scale, mlp_scale;
  BlockSpec spec;                     // the family's arithmetic (UnpackBlock sets it)
  // The layout of the four linear weights (qkv, proj, fc, mlp). Packed
  // ones (not kPlain) are 1-D tensors of out * in values, so that code
  // reading them as [out, in] fails on the shape instead of computing with
  // scrambled numbers. Only infer/layer_math.h computes with them; they are
  // never saved, and sent only to ranks that hold the same layout
  // (PoolOptions::blocks_layout).
  LinearLayout layout = LinearLayout::kPlain;
  WeightFormat format = WeightFormat::kFp32;  // of the four linear weights
  // The flat bytes (PackBlock's layout) every field above is a view of,
  // when they are (UnpackBlock); undefined otherwise.
  at::Tensor flat;
  bool defined() const { return qkv_weight.defined(); }
};

// Number of parameters of one block, and the size in bytes of its flat
// form (PackBlock) with the linear weights in `format`.
int64_t BlockParamCount(const ModelConfig& config);
int64_t BlockBytes(const ModelConfig& config, WeightFormat format = WeightFormat::kFp32);

// The block as one contiguous 1-D uint8 tensor of BlockBytes(config,
// block.format) bytes: the fields in the order above (biases skipped when
// the config has none; an int8 linear's scales right after it), each at an
// offset aligned to 64 bytes. block.flat itself when the block is a view
// of one (no copy), else a new tensor.
at::Tensor PackBlock(const BlockWeights& block, const ModelConfig& config);
// Views into `flat` (not copies), which must be such a tensor of
// BlockBytes(config, format) bytes (PW_CHECK). `layout` and `format`: those
// of the block `flat` came from; packed linears' views stay 1-D. bf16 and
// int8 need kPanels (PW_CHECK).
BlockWeights UnpackBlock(const at::Tensor& flat, const ModelConfig& config,
                         LinearLayout layout = LinearLayout::kPlain,
                         WeightFormat format = WeightFormat::kFp32);

struct ModelWeights {
  ModelConfig config;
  at::Tensor tok_emb, pos_emb;           // [vocab, d], [seq_len, d] (undefined with rope)
  std::vector<BlockWeights> blocks;      // size n_layers; undefined where not kept
  at::Tensor head_ln_weight, head_ln_bias, lm_head;  // lm_head [vocab, d]: tok_emb itself when tied
  // kPanels: lm_head is held in the panel layout (1-D, vocab * d values),
  // and so is tok_emb when tied (the embedding reads its rows from there).
  LinearLayout head_layout = LinearLayout::kPlain;
  // The head's format (kPanels only for bf16 and int8), and an int8 head's
  // per-row scales [vocab]. An untied embedding is held in bf16 when the
  // format is not fp32 (rows are gathered, then widened).
  WeightFormat head_format = WeightFormat::kFp32;
  at::Tensor lm_head_scale;
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

// What turns loaded weights into what the caller computes with
// (infer/layer_math.h PrepackBlock, PackHeadInPanels), called as soon as
// each part is loaded: a Hugging Face directory's embedding and head are
// read and finished first, then its blocks one at a time, so loading never
// holds the whole model in fp32. Either may be empty.
struct LoadFinishers {
  std::function<void(BlockWeights& block)> block;  // a plain fp32 block, a view of its own flat tensor
  std::function<void(ModelWeights& weights)> shared;  // the embedding and head are loaded (a tie made)
};

// Loads the embedding, the head and the blocks whose index is in
// `keep_blocks` (all blocks when `keep_all`), each part passed through
// `finish` as it is loaded. Blocks on file I/O or init. NotFound /
// InvalidArgument naming file and tensor for a bad checkpoint.
Result<ModelWeights> LoadModelWeights(const WeightSource& source,
                                      const std::vector<int>& keep_blocks,
                                      bool keep_all = false,
                                      const LoadFinishers& finish = {});

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

// W [out, in] fp32 as `format` holds it, widened back to fp32: what the
// kernels compute with (bf16 rounded to nearest even; int8 per output
// channel, q * scale). Pure.
at::Tensor RoundedToFormat(const at::Tensor& w, WeightFormat format);

// Rounds the parameters of `model` (a whole model, GptSegment) that
// inference holds in `format` as it holds them (infer/layer_math.h
// PackWeights): every block's four linear weights and the head in the
// format, an untied embedding in bf16 (unless fp32). The model then
// computes what inference in that format computes, to fp32 rounding: what
// `pipewright eval --weights` scores.
void RoundToFormat(GptSegment& model, WeightFormat format);

}  // namespace pw
