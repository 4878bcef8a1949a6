#include "model/hf_config.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <limits>

#include "core/file_io.h"

namespace pw {
namespace {

using Json = nlohmann::json;

// Reads config keys with the file and key in every message.
class Keys {
 public:
  Keys(const Json& j, const std::string& path) : j_(j), path_(path) {}

  Status Int(const char* key, int& out, bool required = true) {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return required ? Missing(key) : Status::Ok();
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > std::numeric_limits<int>::max()) {
      return Bad(key, "a non-negative integer", *it);
    }
    out = static_cast<int>(it->get<int64_t>());
    return Status::Ok();
  }
  Status Number(const char* key, double& out) {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return Status::Ok();
    if (!it->is_number()) return Bad(key, "a number", *it);
    out = it->get<double>();
    return Status::Ok();
  }
  Status Bool(const char* key, bool& out) {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return Status::Ok();
    if (!it->is_boolean()) return Bad(key, "true or false", *it);
    out = it->get<bool>();
    return Status::Ok();
  }
  Status String(const char* key, std::string& out) {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return Status::Ok();
    if (!it->is_string()) return Bad(key, "a string", *it);
    out = it->get<std::string>();
    return Status::Ok();
  }
  // A key whose only supported value is `want` (absent counts as `want`).
  Status Only(const char* key, const Json& want, const std::string& why) {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null() || *it == want) return Status::Ok();
    return Status::InvalidArgument(path_ + ": " + key + " = " + it->dump() + " is not supported (" + why + ")");
  }
  Status Unsupported(const char* key, const std::string& value, const std::string& supported) {
    return Status::InvalidArgument(path_ + ": " + key + " = \"" + value + "\" is not supported; " + supported);
  }

 private:
  Status Missing(const char* key) {
    return Status::InvalidArgument(path_ + ": " + key + " is missing; a Hugging Face config.json of this "
                                   "model_type has it");
  }
  Status Bad(const char* key, const char* want, const Json& got) {
    return Status::InvalidArgument(path_ + ": " + key + " must be " + want + ", got " + got.dump());
  }

  const Json& j_;
  const std::string& path_;
};

Status ReadGpt2(Keys& k, ModelConfig& c) {
  c.position = PositionKind::kLearned;
  c.norm = NormKind::kLayerNorm;
  c.bias = true;
  c.tie_embeddings = true;
  PW_RETURN_IF_ERROR(k.Int("vocab_size", c.vocab_size));
  PW_RETURN_IF_ERROR(k.Int("n_embd", c.d_model));
  PW_RETURN_IF_ERROR(k.Int("n_layer", c.n_layers));
  PW_RETURN_IF_ERROR(k.Int("n_head", c.n_heads));
  PW_RETURN_IF_ERROR(k.Int("n_positions", c.seq_len));
  PW_RETURN_IF_ERROR(k.Int("n_inner", c.d_ff, /*required=*/false));
  PW_RETURN_IF_ERROR(k.Number("layer_norm_epsilon", c.norm_eps));
  PW_RETURN_IF_ERROR(k.Bool("tie_word_embeddings", c.tie_embeddings));
  std::string act = "gelu_new";
  PW_RETURN_IF_ERROR(k.String("activation_function", act));
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") {
    c.mlp = MlpKind::kGeluTanh;
  } else if (act == "gelu") {
    c.mlp = MlpKind::kGelu;
  } else {
    return k.Unsupported("activation_function", act, "GPT-2 runs gelu_new (tanh form) or gelu (erf form)");
  }
  PW_RETURN_IF_ERROR(k.Only("scale_attn_by_inverse_layer_idx", false, "attention is scaled by 1/sqrt(head width)"));
  PW_RETURN_IF_ERROR(k.Only("reorder_and_upcast_attn", false, "attention is computed in fp32 as is"));
  return k.Only("scale_attn_weights", true, "attention is scaled by 1/sqrt(head width)");
}

Status ReadRopeScaling(const Json& j, const std::string& path, ModelConfig& c) {
  auto it = j.find("rope_scaling");
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return Status::InvalidArgument(path + ": rope_scaling must be an object or null");
  std::string type;
  for (const char* key : {"rope_type", "type"}) {
    if (it->contains(key) && (*it)[key].is_string()) type = (*it)[key].get<std::string>();
  }
  if (type == "default") return Status::Ok();
  if (type != "llama3") {
    return Status::InvalidArgument(path + ": rope_scaling of type \"" + type + "\" is not supported; "
                                   "pipewright computes rope_type \"llama3\" (Llama 3.1 and later) or none");
  }
  c.rope_scaling = RopeScaling::kLlama3;
  Keys k(*it, path);
  PW_RETURN_IF_ERROR(k.Number("factor", c.rope_factor));
  PW_RETURN_IF_ERROR(k.Number("low_freq_factor", c.rope_low_freq_factor));
  PW_RETURN_IF_ERROR(k.Number("high_freq_factor", c.rope_high_freq_factor));
  return k.Int("original_max_position_embeddings", c.rope_original_context);
}

Status ReadLlama(const Json& j, Keys& k, ModelConfig& c, bool qwen2, const std::string& path) {
  c.position = PositionKind::kRope;
  c.norm = NormKind::kRmsNorm;
  c.mlp = MlpKind::kSwiGlu;
  c.bias = false;
  c.qkv_bias = qwen2;
  c.norm_eps = 1e-6;
  c.tie_embeddings = false;
  PW_RETURN_IF_ERROR(k.Int("vocab_size", c.vocab_size));
  PW_RETURN_IF_ERROR(k.Int("hidden_size", c.d_model));
  PW_RETURN_IF_ERROR(k.Int("num_hidden_layers", c.n_layers));
  PW_RETURN_IF_ERROR(k.Int("num_attention_heads", c.n_heads));
  c.n_kv_heads = c.n_heads;
  PW_RETURN_IF_ERROR(k.Int("num_key_value_heads", c.n_kv_heads, /*required=*/false));
  PW_RETURN_IF_ERROR(k.Int("intermediate_size", c.d_ff));
  c.seq_len = 2048;
  PW_RETURN_IF_ERROR(k.Int("max_position_embeddings", c.seq_len, /*required=*/false));
  PW_RETURN_IF_ERROR(k.Number("rms_norm_eps", c.norm_eps));
  PW_RETURN_IF_ERROR(k.Number("rope_theta", c.rope_theta));
  PW_RETURN_IF_ERROR(k.Bool("tie_word_embeddings", c.tie_embeddings));
  std::string act = "silu";
  PW_RETURN_IF_ERROR(k.String("hidden_act", act));
  if (act != "silu") return k.Unsupported("hidden_act", act, "the gated MLP of this family runs silu (SwiGLU)");
  PW_RETURN_IF_ERROR(k.Only("attention_bias", false, "q, k, v and o carry no biases in this family"));
  PW_RETURN_IF_ERROR(k.Only("mlp_bias", false, "the MLP carries no biases in this family"));
  PW_RETURN_IF_ERROR(k.Only("use_sliding_window", false, "every layer attends over the whole context"));
  int head_dim = 0;
  PW_RETURN_IF_ERROR(k.Int("head_dim", head_dim, /*required=*/false));
  if (head_dim != 0 && c.n_heads > 0 && head_dim * c.n_heads != c.d_model) {
    return Status::InvalidArgument(path + ": head_dim = " + std::to_string(head_dim) + " differs from hidden_size / "
                                   "num_attention_heads = " + std::to_string(c.d_model / c.n_heads) +
                                   "; heads of another width are not supported");
  }
  return ReadRopeScaling(j, path, c);
}

// Mistral is Llama with sliding-window attention: each token sees the last
// `sliding_window` positions. Within a context no longer than the window
// that is full causal attention, which pipewright computes exactly; so the
// context is capped at the window (a model of sliding_window: null, as
// Mistral v0.2 and later, keeps its whole context).
Status ReadSlidingWindow(Keys& k, ModelConfig& c) {
  int window = 0;
  PW_RETURN_IF_ERROR(k.Int("sliding_window", window, /*required=*/false));
  if (window > 0 && window < c.seq_len) c.seq_len = window;
  return Status::Ok();
}

}  // namespace

Result<std::string> HfModelType(const ModelConfig& c) {
  const bool plain_attention = c.kv_heads() == c.n_heads && !(c.qkv_bias && !c.bias);
  if (c.position == PositionKind::kLearned && c.norm == NormKind::kLayerNorm && c.mlp != MlpKind::kSwiGlu && c.bias && plain_attention) {
    return std::string("gpt2");
  }
  if (c.position == PositionKind::kRope && c.norm == NormKind::kRmsNorm && c.mlp == MlpKind::kSwiGlu && !c.bias) {
    return std::string(c.qkv_bias ? "qwen2" : "llama");
  }
  return Status::InvalidArgument(
      "this model (position " + std::string(Name(c.position)) + ", norm " + std::string(Name(c.norm)) + ", mlp " +
      std::string(Name(c.mlp)) + ", bias " +
      (c.bias ? "true" : "false") + ") is none of the Hugging Face families pipewright writes: gpt2 (learned, "
      "layernorm, gelu or gelu_tanh, bias, one key/value head per head) or llama / qwen2 (rope, rmsnorm, swiglu, "
      "no bias; qwen2 with qkv_bias)");
}

Result<ModelConfig> ParseHfConfig(std::string_view json_text, const std::string& path) {
  Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument(path + ": not a JSON object");
  Keys k(j, path);
  std::string type;
  PW_RETURN_IF_ERROR(k.String("model_type", type));
  ModelConfig c;
  c.dropout = 0.0;
  PW_RETURN_IF_ERROR(k.Number("initializer_range", c.init_std));
  if (type == "gpt2") {
    PW_RETURN_IF_ERROR(ReadGpt2(k, c));
  } else if (type == "llama" || type == "qwen2" || type == "mistral") {
    PW_RETURN_IF_ERROR(ReadLlama(j, k, c, type == "qwen2", path));
    if (type == "mistral") PW_RETURN_IF_ERROR(ReadSlidingWindow(k, c));
  } else {
    return Status::InvalidArgument(path + ": model_type \"" + type + "\" is not supported; pipewright reads gpt2, "
                                   "llama, mistral and qwen2 (docs/models.md)");
  }
  PW_RETURN_IF_ERROR(ValidateModelConfig(c).WithContext(path));
  return c;
}

Result<ModelConfig> ReadHfConfig(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::NotFound(dir + " has no config.json; --model names a Hugging Face model directory "
                            "(config.json, *.safetensors, tokenizer)");
  }
  PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return ParseHfConfig(text, path);
}

Result<std::string> FormatHfConfig(const ModelConfig& c, const std::string& torch_dtype) {
  PW_ASSIGN_OR_RETURN(std::string type, HfModelType(c));
  Json j;
  j["model_type"] = type;
  j["vocab_size"] = c.vocab_size;
  j["initializer_range"] = c.init_std;
  j["tie_word_embeddings"] = c.tie_embeddings;
  j["torch_dtype"] = torch_dtype;
  if (type == "gpt2") {
    j["architectures"] = {"GPT2LMHeadModel"};
    j["n_embd"] = c.d_model;
    j["n_layer"] = c.n_layers;
    j["n_head"] = c.n_heads;
    j["n_positions"] = c.seq_len;
    j["n_ctx"] = c.seq_len;
    // null: 4 x n_embd, GPT-2's default (what d_ff = 0 with mlp_ratio 4 means).
    if (c.d_ff == 0 && c.mlp_ratio == 4) {
      j["n_inner"] = nullptr;
    } else {
      j["n_inner"] = c.ffn_width();
    }
    j["layer_norm_epsilon"] = c.norm_eps;
    j["activation_function"] = c.mlp == MlpKind::kGeluTanh ? "gelu_new" : "gelu";
    j["resid_pdrop"] = j["embd_pdrop"] = j["attn_pdrop"] = 0.0;
  } else {
    j["architectures"] = {type == "qwen2" ? "Qwen2ForCausalLM" : "LlamaForCausalLM"};
    j["hidden_size"] = c.d_model;
    j["num_hidden_layers"] = c.n_layers;
    j["num_attention_heads"] = c.n_heads;
    j["num_key_value_heads"] = c.kv_heads();
    j["intermediate_size"] = c.ffn_width();
    j["max_position_embeddings"] = c.seq_len;
    j["rms_norm_eps"] = c.norm_eps;
    j["rope_theta"] = c.rope_theta;
    j["hidden_act"] = "silu";
    if (type == "llama") j["attention_bias"] = false;
    if (c.rope_scaling == RopeScaling::kLlama3) {
      j["rope_scaling"] = {{"rope_type", "llama3"},
                           {"factor", c.rope_factor},
                           {"low_freq_factor", c.rope_low_freq_factor},
                           {"high_freq_factor", c.rope_high_freq_factor},
                           {"original_max_position_embeddings", c.rope_original_context}};
    } else {
      j["rope_scaling"] = nullptr;
    }
  }
  return j.dump(2) + "\n";
}

}  // namespace pw
