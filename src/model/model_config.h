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
  }
};

// OK, or InvalidArgument naming every violated constraint (positive sizes,
// d_model % n_heads == 0, 0 <= dropout < 1, init_std > 0).
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

// Number of trainable parameters of the model this config describes.
long long CountParameters(const ModelConfig& config);

}  // namespace pw
