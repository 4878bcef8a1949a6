#include "job/fields_toml.h"

#include <toml++/toml.h>

#include "core/text.h"
#include "model/toml_text.h"

namespace pw {
namespace {

// A scalar node as the text SetFieldFromText parses; false for other nodes.
bool ScalarText(const toml::node& node, std::string* text) {
  if (auto s = node.value_exact<std::string>()) {
    *text = *s;
  } else if (auto i = node.value_exact<int64_t>()) {
    *text = std::to_string(*i);
  } else if (auto d = node.value_exact<double>()) {
    *text = ExactDouble(*d);
  } else if (auto b = node.value_exact<bool>()) {
    *text = *b ? "true" : "false";
  } else {
    return false;
  }
  return true;
}

}  // namespace

Result<std::vector<TomlSetting>> ReadTomlTable(std::string_view toml_text, std::string_view section,
                                               std::string_view source) {
  PW_ASSIGN_OR_RETURN(toml::table root, ParseTomlText(toml_text, source));
  std::vector<TomlSetting> out;
  const toml::node* node = root.get(section);
  if (node == nullptr) return out;
  const toml::table* table = node->as_table();
  if (table == nullptr) {
    return Status::InvalidArgument(TomlLocation(source, node->source()) + ": '" + std::string(section) +
                                   "' must be a table ([" + std::string(section) + "])");
  }
  for (auto&& [key, value] : *table) {
    const std::string origin = TomlLocation(source, key.source()) + ": [" + std::string(section) + "] " +
                               PrintableText(key.str());
    std::string text;
    if (ScalarText(value, &text)) {
      out.push_back({std::string(key.str()), text, origin});
    } else if (const toml::array* array = value.as_array()) {
      for (const toml::node& element : *array) {
        if (!element.is_string()) {
          return Status::InvalidArgument(origin + ": an array may hold only strings");
        }
        out.push_back({std::string(key.str()), *element.value_exact<std::string>(), origin});
      }
    } else {
      return Status::InvalidArgument(origin + ": expected a string, number, boolean or array of strings");
    }
  }
  return out;
}

}  // namespace pw
