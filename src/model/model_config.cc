#include "model/model_config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

#include "core/file_io.h"
#include "core/text.h"
#include "model/toml_text.h"

namespace pw {
namespace {

// "vocab_size, d_model, ...": every [model] key, in declaration order.
std::string ValidKeyList() {
  std::string out;
  auto visit = [&](const auto&, const FieldInfo& info) { out += (out.empty() ? "" : ", ") + std::string(info.name); };
  ModelConfig{}.VisitFields(visit);
  return out;
}

// Whether `key` is a [model] key.
bool IsKey(std::string_view key) {
  bool found = false;
  auto visit = [&](const auto&, const FieldInfo& info) { found = found || info.name == key; };
  ModelConfig{}.VisitFields(visit);
  return found;
}

std::string UnknownKeyMessage(std::string_view key) {
  return "unknown key 'model." + PrintableText(key) + "'" + UnknownKeyHint(ModelConfig{}, key, "[model] keys");
}

std::string_view NodeTypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    default: return "a date/time";
  }
}

// Sets the field of key `key` (a [model] key) from a TOML node of the type
// the field has (an integer also for a float); messages carry the node's
// position. Ranges are left to ValidateModelConfig, which names them all.
Status SetFromNode(ModelConfig& config, std::string_view key, const toml::node& node, std::string_view source) {
  const std::string where = TomlLocation(source, node.source());
  Status status;
  auto visit = [&](auto& field, const FieldInfo& info) {
    if (info.name != key) return;
    using T = std::remove_reference_t<decltype(field)>;
    const std::string name = "model." + std::string(info.name);
    auto wrong_type = [&](std::string_view want) {
      status = Status::InvalidArgument(where + ": " + name + " must be " + std::string(want) + ", got " +
                                       std::string(NodeTypeName(node)));
    };
    if constexpr (std::is_same_v<T, bool>) {
      if (!node.is_boolean()) return wrong_type("true or false");
      field = node.as_boolean()->get();
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!node.is_string()) return wrong_type("a string");
      const std::string value = node.as_string()->get();
      status = CheckFieldChoice(value, info, where + ": " + name);
      if (status.ok()) field = value;
    } else if constexpr (std::is_enum_v<T>) {
      if (!node.is_string()) return wrong_type("a string");
      const std::string value = node.as_string()->get();
      status = CheckFieldChoice(value, info, where + ": " + name);
      if (status.ok()) field = static_cast<T>(*ChoiceIndex(info.choices, value));
    } else if constexpr (std::is_integral_v<T>) {
      if (!node.is_integer()) return wrong_type("an integer");
      const int64_t value = node.as_integer()->get();
      if (value < std::numeric_limits<T>::min() || value > std::numeric_limits<T>::max()) {
        status = Status::InvalidArgument(where + ": " + name + " = " + std::to_string(value) + " is out of range");
        return;
      }
      field = static_cast<T>(value);
    } else {
      if (node.is_integer()) {
        field = static_cast<T>(node.as_integer()->get());
      } else if (node.is_floating_point()) {
        field = node.as_floating_point()->get();
      } else {
        return wrong_type("a number");
      }
    }
  };
  config.VisitFields(visit);
  return status;
}

}  // namespace

Status ValidateModelConfig(const ModelConfig& c) {
  std::vector<std::string> problems;
  // Every size (an integer key declared >= 1) must be positive.
  auto positive = [&](const auto& value, const FieldInfo& info) {
    if constexpr (std::is_integral_v<std::remove_cvref_t<decltype(value)>> &&
                  !std::is_same_v<std::remove_cvref_t<decltype(value)>, bool>) {
      if (info.min >= 1 && value <= 0) {
        problems.push_back("model." + std::string(info.name) + " must be positive, got " + std::to_string(value));
      }
    }
  };
  c.VisitFields(positive);
  if (c.d_model > 0 && c.n_heads > 0 && c.d_model % c.n_heads != 0) {
    problems.push_back("model.d_model (" + std::to_string(c.d_model) +
                       ") must be divisible by model.n_heads (" + std::to_string(c.n_heads) +
                       "); e.g. set n_heads to a divisor of d_model");
  }
  if (c.n_heads > 0 && c.n_kv_heads > 0 && c.n_heads % c.n_kv_heads != 0) {
    problems.push_back("model.n_heads (" + std::to_string(c.n_heads) + ") must be a multiple of model.n_kv_heads (" +
                       std::to_string(c.n_kv_heads) + "): each key/value head serves a whole group of query heads");
  }
  if (c.rope() && c.d_model > 0 && c.n_heads > 0 && c.d_model % c.n_heads == 0 &&
      c.head_dim() % 2 != 0) {
    problems.push_back("model.position = \"rope\" rotates pairs of a head's dimensions, so d_model / n_heads (" +
                       std::to_string(c.head_dim()) + ") must be even");
  }
  if (c.rope_scaling == RopeScaling::kLlama3 && !(c.rope_high_freq_factor > c.rope_low_freq_factor)) {
    problems.push_back("model.rope_high_freq_factor must be above model.rope_low_freq_factor for llama3 scaling");
  }
  auto choice = [&](const auto& value, const FieldInfo& info) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>, std::string>) {
      if (Status bad = CheckFieldChoice(value, info, "model." + std::string(info.name)); !bad.ok()) {
        problems.push_back(bad.message());
      }
    }
  };
  c.VisitFields(choice);
  if (!(c.dropout >= 0.0 && c.dropout < 1.0)) {
    problems.push_back("model.dropout must be in [0, 1), got " + std::to_string(c.dropout));
  }
  if (!(c.init_std > 0.0) || !std::isfinite(c.init_std)) {
    problems.push_back("model.init_std must be positive, got " + std::to_string(c.init_std));
  }
  if (problems.empty()) return Status::Ok();
  std::string message = "invalid model config: ";
  for (size_t i = 0; i < problems.size(); ++i) {
    if (i > 0) message += "; ";
    message += problems[i];
  }
  return Status::InvalidArgument(message);
}

Result<ModelConfig> ParseModelConfig(std::string_view toml_text, std::string_view source_name) {
  PW_ASSIGN_OR_RETURN(toml::table root, ParseTomlText(toml_text, source_name));
  const toml::node* model_node = root.get("model");
  if (model_node == nullptr) {
    return Status::InvalidArgument(std::string(source_name) +
                                   ": no [model] table; add one with keys such as " +
                                   ValidKeyList());
  }
  const toml::table* model = model_node->as_table();
  if (model == nullptr) {
    return Status::InvalidArgument(TomlLocation(source_name, model_node->source()) +
                                   ": 'model' must be a table ([model])");
  }
  ModelConfig config;
  for (auto&& [key, node] : *model) {
    if (!IsKey(key.str())) {
      return Status::InvalidArgument(TomlLocation(source_name, key.source()) + ": " +
                                     UnknownKeyMessage(key.str()));
    }
    PW_RETURN_IF_ERROR(SetFromNode(config, key.str(), node, source_name));
  }
  PW_RETURN_IF_ERROR(ValidateModelConfig(config).WithContext(source_name));
  return config;
}

Result<ModelConfig> LoadModelConfig(const std::string& path) {
  PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return ParseModelConfig(text, path);
}

Status ApplyOverride(ModelConfig& config, std::string_view assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) {
    return Status::InvalidArgument("--set " + std::string(assignment) +
                                   ": expected section.key=value, e.g. model.d_model=256");
  }
  std::string_view path = TrimSpaces(assignment.substr(0, eq));
  std::string_view value = TrimSpaces(assignment.substr(eq + 1));
  const size_t dot = path.find('.');
  if (dot == std::string_view::npos) {
    return Status::InvalidArgument("--set " + std::string(assignment) +
                                   ": key must name its section, e.g. model." +
                                   std::string(path));
  }
  std::string_view section = path.substr(0, dot);
  std::string_view key = path.substr(dot + 1);
  if (section != "model") {
    return Status::InvalidArgument("--set " + std::string(assignment) + ": unknown section '" +
                                   std::string(section) + "'; the model config has [model]");
  }
  if (!IsKey(key)) {
    return Status::InvalidArgument("--set " + std::string(assignment) + ": " +
                                   UnknownKeyMessage(key));
  }
  return SetFieldFromText(config, "model", key, value);
}

Status ApplyOverrides(ModelConfig& config, const std::vector<std::string>& assignments) {
  for (const std::string& assignment : assignments) {
    PW_RETURN_IF_ERROR(ApplyOverride(config, assignment));
  }
  return ValidateModelConfig(config).WithContext("after --set overrides");
}

std::string FormatModelConfig(const ModelConfig& config) {
  std::ostringstream out;
  out << "[model]\n";
  auto visit = [&](const auto& field, const FieldInfo& info) {
    using T = std::remove_cvref_t<decltype(field)>;
    out << info.name << " = ";
    if constexpr (std::is_same_v<T, bool>) {
      out << (field ? "true" : "false");
    } else if constexpr (std::is_same_v<T, std::string>) {
      out << '"' << field << '"';  // choices: plain words, nothing to escape
    } else if constexpr (std::is_enum_v<T>) {
      out << '"' << ChoiceAt(info.choices, static_cast<size_t>(field)) << '"';
    } else if constexpr (std::is_integral_v<T>) {
      out << field;
    } else {
      // Shortest text that reads back to the same double.
      char buffer[64];
      auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), field);
      PW_CHECK(ec == std::errc(), "to_chars failed");
      std::string text(buffer, end);
      if (text.find_first_of(".eEn") == std::string::npos) text += ".0";  // a TOML float
      out << text;
    }
    out << "\n";
  };
  config.VisitFields(visit);
  return out.str();
}

long long BlockParameterCount(const ModelConfig& c) {
  const long long d = c.d_model, h = c.ffn_width();
  const long long b = c.bias ? 1 : 0, qkv = c.qkv_width(), up = c.mlp_up_width();
  const long long norm = c.norm == NormKind::kRmsNorm ? d : 2 * d;   // weight (+ bias)
  return 2 * norm                                           // two norms
         + d * qkv + (c.has_qkv_bias() ? qkv : 0)           // q, k, v
         + d * d + b * d                                    // attention output
         + d * up + b * up                                  // MLP up (and gate)
         + h * d + b * d;                                   // MLP down
}

long long EmbeddingParameterCount(const ModelConfig& c) {
  return (static_cast<long long>(c.vocab_size) + (c.rope() ? 0 : c.seq_len)) * c.d_model;
}

long long HeadParameterCount(const ModelConfig& c) {
  const long long d = c.d_model, norm = c.norm == NormKind::kRmsNorm ? d : 2 * d;
  return norm + (c.tie_embeddings ? 0 : d * c.vocab_size);
}

long long CountParameters(const ModelConfig& c) {
  return EmbeddingParameterCount(c) + c.n_layers * BlockParameterCount(c) + HeadParameterCount(c);
}

}  // namespace pw
