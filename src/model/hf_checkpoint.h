// Hugging Face model weights in and out, under pipewright's parameter names
// (model/gpt.h). A directory holds model.safetensors, or shards
// model-0000N-of-0000M.safetensors listed by model.safetensors.index.json
// ("weight_map": tensor -> file); tensors are F32, F16 or BF16 and are
// computed with in fp32.
//
// Name mapping (ours <- Hugging Face's), per block i:
//   gpt2:        embed.tok_emb <- wte, embed.pos_emb <- wpe, ln1 <- h.i.ln_1,
//                attn.qkv <- h.i.attn.c_attn, attn.proj <- h.i.attn.c_proj,
//                ln2 <- h.i.ln_2, mlp.fc <- h.i.mlp.c_fc,
//                mlp.proj <- h.i.mlp.c_proj, head.ln <- ln_f (each with or
//                without the "transformer." prefix); GPT-2's Conv1D weights
//                are [in, out] and are transposed; the head is wte (tied) or
//                lm_head.weight.
//   llama/qwen2: embed.tok_emb <- model.embed_tokens, ln1 <-
//                model.layers.i.input_layernorm, attn.qkv <- q_proj, k_proj,
//                v_proj stacked (weights and qwen2's biases), attn.proj <-
//                o_proj, ln2 <- post_attention_layernorm, mlp.fc <-
//                gate_proj, up_proj stacked, mlp.proj <- down_proj, head.ln
//                <- model.norm, head.lm_head <- lm_head (untied).
//
// Loading is per parameter: the files are memory-mapped and only the bytes
// of the tensors asked for are read, so a pipeline stage that loads its own
// layers never reads the rest of the model.
//
// Thread-safety: free functions without shared state. Failure: Status
// naming the directory, file and tensor.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "model/model_config.h"

namespace pw {

using HfNamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// The parameters (pipewright names, fp32, contiguous) of the model in `dir`
// whose names `wanted` accepts, each checked against the shape `config`
// gives it. Reads the index and the safetensors headers, and the bytes of
// the wanted tensors only. NotFound: no weights in `dir`, or a tensor the
// mapping needs is absent (named, with its file); InvalidArgument: a
// malformed or truncated file, a shape that differs from the config's, a
// shard the index names that is missing.
Result<HfNamedTensors> LoadHfParameters(const std::string& dir, const ModelConfig& config,
                                        const std::function<bool(std::string_view name)>& wanted);

// The element type the weights in `dir` are stored in (that of the first
// file's first tensor: kFloat, kHalf or kBFloat16). Reads one header.
// NotFound / InvalidArgument as LoadHfParameters.
Result<at::ScalarType> HfStoredDtype(const std::string& dir);

// Copies the model in `dir` into `params` (pipewright names; a stage's or
// the whole model's parameters, which must be exactly the ones the config
// gives that stage), reading only those tensors. Errors as LoadHfParameters.
Status InitFromHfModel(const std::string& dir, const ModelConfig& config, const HfNamedTensors& params);

// Writes `params` (every parameter of the whole model, pipewright names) as
// a Hugging Face directory `dir` (created if needed): config.json and
// model.safetensors in `dtype` ("F32", "F16" or "BF16"; F32 round-trips bit
// for bit). InvalidArgument for a config that is no Hugging Face family
// (model/hf_config.h HfModelType) or a missing parameter; IoError for the
// files.
Status ExportHfModel(const std::string& dir, const ModelConfig& config, const HfNamedTensors& params,
                     const std::string& dtype = "F32");

// Keeps in an exported directory `dir` (ExportHfModel's) the facts of the
// Hugging Face directory the model was trained from, whose files are in
// `source` (a checkpoint's kCheckpointSourceDir): a rotary model's context
// (max_position_embeddings: the training window --set model.seq_len gave
// is not the model's context; a learned position table has only the rows
// it was trained with, so its size stays), bos_token_id and eos_token_id
// in config.json; every other file there (generation_config.json, the
// tokenizer's) copied.
// Files written atomically. InvalidArgument naming a source file that is
// not JSON; IoError for the files.
Status KeepHfSourceFacts(const std::string& dir, const std::string& source, const ModelConfig& config);

}  // namespace pw
