// Hugging Face model directories' config.json as a ModelConfig, and back.
// A directory that `--model DIR` names holds config.json, the weights
// (model.safetensors, or model-0000N-of-0000M.safetensors with
// model.safetensors.index.json; model/hf_checkpoint.h) and the tokenizer.
//
// Families read (docs/models.md has the key-by-key table):
//   gpt2   learned positions, LayerNorm with bias, GELU (tanh form:
//          activation_function "gelu_new"), fused qkv with bias, tied head.
//   llama  rotary positions (rope_theta; rope_scaling of rope_type
//          "llama3"), RMSNorm, SwiGLU of intermediate_size, grouped-query
//          attention (num_key_value_heads), no biases, head tied or not.
//   qwen2  llama with biases on q, k and v.
// Anything else the config asks for that pipewright cannot compute (another
// model_type, rope_scaling type, activation, attention or MLP biases,
// sliding windows, a head_dim other than hidden_size / heads) is refused
// with the key and what is supported — never silently approximated.
//
// Thread-safety: pure functions, except ReadHfConfig, which reads a file.
// No LibTorch.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "model/model_config.h"

namespace pw {

// "gpt2", "llama", "qwen2": the Hugging Face model_type a config runs as,
// or InvalidArgument saying why it is none of them (e.g. the byte-level
// GPT: exact GELU, untied head).
Result<std::string> HfModelType(const ModelConfig& config);

// Parses config.json text; `path` names it in messages ("path: key: what").
Result<ModelConfig> ParseHfConfig(std::string_view json_text, const std::string& path);

// Reads DIR/config.json (ParseHfConfig). NotFound when DIR has none.
Result<ModelConfig> ReadHfConfig(const std::string& dir);

// config.json text for `config` (HfModelType's family), which ParseHfConfig
// reads back to an equal config: what `export` writes. `torch_dtype` names
// the tensors' type ("float32", "bfloat16", "float16").
Result<std::string> FormatHfConfig(const ModelConfig& config, const std::string& torch_dtype = "float32");

}  // namespace pw
