// ModelConfig: the shape of the GPT-style decoder as data, read from the
// [model] table of a TOML file (examples/tiny.toml, examples/small.toml) and
// adjusted by `--set model.key=value` overrides. docs/model.md lists the keys.
//
// Other tables in the same file ([train], [data], ...) belong to other layers
// and are ignored here; an unknown key inside [model] is an error that names
// it and lists the valid keys. This header and its .cc do not use LibTorch.
//
// Thread-safety: every function here is pure (no shared state) and may be
// called concurrently; ModelConfig is a plain value.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/fields.h"
#include "core/status.h"

namespace pw {

// The family's pieces (docs/models.md), each an enum whose names are its
// [model] key's choices, in the enum's order (core/fields.h ChoiceIndex).
enum class PositionKind { kLearned, kRope };     // a position table; rotary (no table)
enum class NormKind { kLayerNorm, kRmsNorm };     // weight + bias; weight only
enum class MlpKind { kGelu, kGeluTanh, kSwiGlu }; // GELU (erf), GELU (tanh), gated SiLU
enum class RopeScaling { kNone, kLlama3 };        // Llama 3.1's long-context rule
inline constexpr std::string_view kPositionChoices = "learned rope";
inline constexpr std::string_view kNormChoices = "layernorm rmsnorm";
inline constexpr std::string_view kMlpChoices = "gelu gelu_tanh swiglu";
inline constexpr std::string_view kRopeScalingChoices = "none llama3";
inline std::string_view Name(PositionKind k) { return ChoiceAt(kPositionChoices, static_cast<size_t>(k)); }
inline std::string_view Name(NormKind k) { return ChoiceAt(kNormChoices, static_cast<size_t>(k)); }
inline std::string_view Name(MlpKind k) { return ChoiceAt(kMlpChoices, static_cast<size_t>(k)); }
inline std::string_view Name(RopeScaling k) { return ChoiceAt(kRopeScalingChoices, static_cast<size_t>(k)); }

struct ModelConfig {
  int vocab_size = 256;     // byte-level tokens by default
  int d_model = 128;        // residual width
  int n_layers = 4;         // transformer blocks
  int n_heads = 4;          // attention heads; d_model % n_heads == 0
  int seq_len = 64;         // context length (positions)
  int mlp_ratio = 4;        // MLP hidden width = mlp_ratio * d_model
  double dropout = 0.0;     // residual/attention dropout in training mode, [0, 1)
  bool bias = true;         // biases on the block's Linear layers (the LM head has none)
  double init_std = 0.02;   // normal init std of weights (residual projections
                            // use init_std / sqrt(2 * n_layers), GPT-2's rule)
  // The family's pieces (docs/models.md). The defaults are the byte-level
  // GPT; GPT-2 is learned + layernorm + gelu_tanh + tied; Llama is rope +
  // rmsnorm + swiglu (+ n_kv_heads for grouped-query attention); Qwen2 is
  // Llama with qkv_bias.
  PositionKind position = PositionKind::kLearned;
  NormKind norm = NormKind::kLayerNorm;
  double norm_eps = 1e-5;
  MlpKind mlp = MlpKind::kGelu;
  int d_ff = 0;                      // MLP hidden width; 0: mlp_ratio * d_model
  int n_kv_heads = 0;                // key/value heads (grouped-query); 0: n_heads
  double rope_theta = 10000.0;
  RopeScaling rope_scaling = RopeScaling::kNone;
  double rope_factor = 8.0;          // llama3 scaling's parameters (as in HF config.json)
  double rope_low_freq_factor = 1.0;
  double rope_high_freq_factor = 4.0;
  int rope_original_context = 8192;
  bool tie_embeddings = false;       // the LM head is the token embedding
  bool qkv_bias = false;             // biases on q, k, v even when bias = false (Qwen2)

  // Derived sizes.
  int kv_heads() const { return n_kv_heads > 0 ? n_kv_heads : n_heads; }
  int head_dim() const { return d_model / n_heads; }
  int kv_width() const { return kv_heads() * head_dim(); }      // one of K or V per token
  int qkv_width() const { return d_model + 2 * kv_width(); }    // the fused q, k, v projection
  int ffn_width() const { return d_ff > 0 ? d_ff : mlp_ratio * d_model; }
  int mlp_up_width() const { return gated_mlp() ? 2 * ffn_width() : ffn_width(); }  // mlp.fc's rows
  bool gated_mlp() const { return mlp == MlpKind::kSwiGlu; }
  bool rope() const { return position == PositionKind::kRope; }
  bool has_qkv_bias() const { return bias || qkv_bias; }

  bool operator==(const ModelConfig&) const = default;

  // Every [model] key, declared once (core/fields.h): the TOML reader,
  // --set overrides, the formatter and the list of valid keys all visit
  // this list. The ranges are per key; ValidateModelConfig adds the rules
  // across keys.
  template <class V> void VisitFields(V& v) { Visit(*this, v); }
  template <class V> void VisitFields(V& v) const { Visit(*this, v); }

 private:
  template <class Self, class V>
  static void Visit(Self& c, V& v) {
    constexpr double kIntMax = 2147483647.0;
    v(c.vocab_size, {"vocab_size", "Token ids (256: bytes)", 1, kIntMax});
    v(c.d_model, {"d_model", "Residual width", 1, kIntMax});
    v(c.n_layers, {"n_layers", "Transformer blocks", 1, kIntMax});
    v(c.n_heads, {"n_heads", "Attention heads (a divisor of d_model)", 1, kIntMax});
    v(c.seq_len, {"seq_len", "Context length (positions)", 1, kIntMax});
    v(c.mlp_ratio, {"mlp_ratio", "MLP hidden width = mlp_ratio x d_model", 1, kIntMax});
    v(c.dropout, {"dropout", "Residual and attention dropout in training, in [0, 1)", 0, 1});
    v(c.bias, {"bias", "Biases on the block's Linear layers (the LM head has none)"});
    v(c.init_std, {"init_std", "Normal init std of weights (residual projections: / sqrt(2 n_layers))", 0});
    v(c.position, {.name = "position", .help = "Positions: a learned table, or rotary embeddings",
                   .choices = kPositionChoices});
    v(c.norm, {.name = "norm", .help = "Normalisation: LayerNorm (weight and bias) or RMSNorm (weight)",
               .choices = kNormChoices});
    v(c.norm_eps, {"norm_eps", "Epsilon of the norms", 0, 1});
    v(c.mlp, {.name = "mlp", .help = "MLP: GELU (erf), GELU (tanh, GPT-2) or SwiGLU (gated, Llama)",
              .choices = kMlpChoices});
    v(c.d_ff, {"d_ff", "MLP hidden width (0: mlp_ratio x d_model)", 0, kIntMax});
    v(c.n_kv_heads, {"n_kv_heads", "Key/value heads, a divisor of n_heads (0: n_heads)", 0, kIntMax});
    v(c.rope_theta, {"rope_theta", "Rotary embeddings' base", 1});
    v(c.rope_scaling, {.name = "rope_scaling", .help = "Rotary frequencies' scaling: none, or Llama 3.1's",
                       .choices = kRopeScalingChoices});
    v(c.rope_factor, {"rope_factor", "llama3 scaling: factor", 1});
    v(c.rope_low_freq_factor, {"rope_low_freq_factor", "llama3 scaling: low_freq_factor", 0});
    v(c.rope_high_freq_factor, {"rope_high_freq_factor", "llama3 scaling: high_freq_factor", 0});
    v(c.rope_original_context, {"rope_original_context", "llama3 scaling: original_max_position_embeddings", 1,
                                kIntMax});
    v(c.tie_embeddings, {"tie_embeddings", "The LM head is the token embedding (GPT-2, small Llamas)"});
    v(c.qkv_bias, {"qkv_bias", "Biases on q, k and v even without bias (Qwen2)"});
  }
};

// OK, or InvalidArgument naming every violated constraint (positive sizes,
// d_model % n_heads == 0, n_heads % n_kv_heads == 0, an even head width
// with rope, 0 <= dropout < 1, init_std > 0, choices).
Status ValidateModelConfig(const ModelConfig& config);

// Parses TOML text; `source_name` (a path) prefixes every message with
// "source:line:col". Keys missing from [model] keep their defaults; a missing
// [model] table is an error. The result is validated. Never throws.
Result<ModelConfig> ParseModelConfig(std::string_view toml_text, std::string_view source_name);

// Reads and parses the file at `path` (ParseModelConfig). Blocks on file I/O.
// NotFound / IoError for the file, InvalidArgument for its contents.
Result<ModelConfig> LoadModelConfig(const std::string& path);

// Applies one override "model.key=value" (the text after `--set`). Errors
// (InvalidArgument): no '=', a section other than "model", an unknown key
// (named, with the valid keys listed), or a value of the wrong type. Does not
// check cross-key constraints, since a sequence of overrides may pass through
// an inconsistent state; call ValidateModelConfig (or ApplyOverrides) after.
Status ApplyOverride(ModelConfig& config, std::string_view assignment);

// Applies every override in order, then validates. Stops at the first error.
Status ApplyOverrides(ModelConfig& config, const std::vector<std::string>& assignments);

// The config as a TOML [model] table that ParseModelConfig reads back
// exactly (for checkpoint manifests and logs).
std::string FormatModelConfig(const ModelConfig& config);

// Number of trainable parameters of the model this config describes, and
// of its parts: one block, the embedding unit, the head unit (0 when tied:
// it uses the embedding's).
long long CountParameters(const ModelConfig& config);
long long BlockParameterCount(const ModelConfig& config);
long long EmbeddingParameterCount(const ModelConfig& config);
long long HeadParameterCount(const ModelConfig& config);

}  // namespace pw
