#include "model/model_config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/file_io.h"
#include "core/text.h"
#include "model/toml_text.h"

namespace pw {
namespace {

enum class KeyType { kInt, kDouble, kBool };

// One [model] key: its name, type and field. The table is the single source
// of truth for loading, overrides, formatting and the list of valid keys.
struct KeySpec {
  std::string_view name;
  KeyType type;
  int ModelConfig::*int_field = nullptr;
  double ModelConfig::*double_field = nullptr;
  bool ModelConfig::*bool_field = nullptr;
};

constexpr KeySpec kKeys[] = {
    {"vocab_size", KeyType::kInt, &ModelConfig::vocab_size},
    {"d_model", KeyType::kInt, &ModelConfig::d_model},
    {"n_layers", KeyType::kInt, &ModelConfig::n_layers},
    {"n_heads", KeyType::kInt, &ModelConfig::n_heads},
    {"seq_len", KeyType::kInt, &ModelConfig::seq_len},
    {"mlp_ratio", KeyType::kInt, &ModelConfig::mlp_ratio},
    {"dropout", KeyType::kDouble, nullptr, &ModelConfig::dropout},
    {"bias", KeyType::kBool, nullptr, nullptr, &ModelConfig::bias},
    {"init_std", KeyType::kDouble, nullptr, &ModelConfig::init_std},
};

const KeySpec* FindKey(std::string_view name) {
  for (const KeySpec& spec : kKeys) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

std::string_view TypeName(KeyType type) {
  switch (type) {
    case KeyType::kInt: return "an integer";
    case KeyType::kDouble: return "a number";
    case KeyType::kBool: return "true or false";
  }
  return "?";
}

std::string ValidKeyList() {
  std::string out;
  for (const KeySpec& spec : kKeys) {
    if (!out.empty()) out += ", ";
    out += spec.name;
  }
  return out;
}

std::string UnknownKeyMessage(std::string_view key) {
  std::string message = "unknown key 'model." + PrintableText(key) + "'";
  const KeySpec* best = nullptr;
  size_t best_distance = 3;  // suggest only close misspellings
  for (const KeySpec& spec : kKeys) {
    size_t d = EditDistance(key, spec.name);
    if (d < best_distance) best_distance = d, best = &spec;
  }
  if (best != nullptr) message += " (did you mean '" + std::string(best->name) + "'?)";
  return message + "; valid [model] keys: " + ValidKeyList();
}

Status SetInt(ModelConfig& config, const KeySpec& spec, long long value) {
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
    return Status::InvalidArgument("model." + std::string(spec.name) + " = " +
                                   std::to_string(value) + " is out of range");
  }
  config.*spec.int_field = static_cast<int>(value);
  return Status::Ok();
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

// Sets one key from a TOML node; messages carry the node's position.
Status SetFromNode(ModelConfig& config, const KeySpec& spec, const toml::node& node,
                   std::string_view source) {
  const std::string where = TomlLocation(source, node.source());
  auto wrong_type = [&] {
    return Status::InvalidArgument(where + ": model." + std::string(spec.name) + " must be " +
                                   std::string(TypeName(spec.type)) + ", got " +
                                   std::string(NodeTypeName(node)));
  };
  switch (spec.type) {
    case KeyType::kInt:
      if (!node.is_integer()) return wrong_type();
      return SetInt(config, spec, node.as_integer()->get()).WithContext(where);
    case KeyType::kDouble:
      if (node.is_integer()) {
        config.*spec.double_field = static_cast<double>(node.as_integer()->get());
      } else if (node.is_floating_point()) {
        config.*spec.double_field = node.as_floating_point()->get();
      } else {
        return wrong_type();
      }
      return Status::Ok();
    case KeyType::kBool:
      if (!node.is_boolean()) return wrong_type();
      config.*spec.bool_field = node.as_boolean()->get();
      return Status::Ok();
  }
  return Status::Internal("unhandled key type");
}

// Sets one key from override text.
Status SetFromText(ModelConfig& config, const KeySpec& spec, std::string_view text) {
  const std::string what = "--set model." + std::string(spec.name) + "=" + std::string(text);
  auto wrong = [&] {
    return Status::InvalidArgument(what + ": expected " + std::string(TypeName(spec.type)));
  };
  switch (spec.type) {
    case KeyType::kInt: {
      long long value = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return wrong();
      return SetInt(config, spec, value).WithContext(what);
    }
    case KeyType::kDouble: {
      double value = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || end != text.data() + text.size() || text.empty() ||
          !std::isfinite(value)) {
        return wrong();
      }
      config.*spec.double_field = value;
      return Status::Ok();
    }
    case KeyType::kBool:
      if (text == "true") config.*spec.bool_field = true;
      else if (text == "false") config.*spec.bool_field = false;
      else return wrong();
      return Status::Ok();
  }
  return Status::Internal("unhandled key type");
}

}  // namespace

Status ValidateModelConfig(const ModelConfig& c) {
  std::vector<std::string> problems;
  auto positive = [&](std::string_view name, int value) {
    if (value <= 0) {
      problems.push_back("model." + std::string(name) + " must be positive, got " +
                         std::to_string(value));
    }
  };
  positive("vocab_size", c.vocab_size);
  positive("d_model", c.d_model);
  positive("n_layers", c.n_layers);
  positive("n_heads", c.n_heads);
  positive("seq_len", c.seq_len);
  positive("mlp_ratio", c.mlp_ratio);
  if (c.d_model > 0 && c.n_heads > 0 && c.d_model % c.n_heads != 0) {
    problems.push_back("model.d_model (" + std::to_string(c.d_model) +
                       ") must be divisible by model.n_heads (" + std::to_string(c.n_heads) +
                       "); e.g. set n_heads to a divisor of d_model");
  }
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
    const KeySpec* spec = FindKey(key.str());
    if (spec == nullptr) {
      return Status::InvalidArgument(TomlLocation(source_name, key.source()) + ": " +
                                     UnknownKeyMessage(key.str()));
    }
    PW_RETURN_IF_ERROR(SetFromNode(config, *spec, node, source_name));
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
  const KeySpec* spec = FindKey(key);
  if (spec == nullptr) {
    return Status::InvalidArgument("--set " + std::string(assignment) + ": " +
                                   UnknownKeyMessage(key));
  }
  return SetFromText(config, *spec, value);
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
  for (const KeySpec& spec : kKeys) {
    out << spec.name << " = ";
    switch (spec.type) {
      case KeyType::kInt: out << config.*spec.int_field; break;
      case KeyType::kDouble: {
        // Shortest text that reads back to the same double.
        char buffer[64];
        auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), config.*spec.double_field);
        PW_CHECK(ec == std::errc(), "to_chars failed");
        std::string text(buffer, end);
        if (text.find_first_of(".eEn") == std::string::npos) text += ".0";  // a TOML float
        out << text;
        break;
      }
      case KeyType::kBool: out << (config.*spec.bool_field ? "true" : "false"); break;
    }
    out << "\n";
  }
  return out.str();
}

long long CountParameters(const ModelConfig& c) {
  const long long d = c.d_model, v = c.vocab_size, t = c.seq_len, h = c.mlp_ratio * d;
  const long long b = c.bias ? 1 : 0;
  const long long per_block = 2 * 2 * d                 // two LayerNorms
                              + d * 3 * d + b * 3 * d   // qkv
                              + d * d + b * d           // attention output
                              + d * h + b * h           // MLP up
                              + h * d + b * d;          // MLP down
  return v * d + t * d + c.n_layers * per_block + 2 * d + d * v;
}

}  // namespace pw
