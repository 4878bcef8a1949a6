// Test-only: an independent validator for the JSON Schema subset that
// constrain/json_schema_regex.h compiles (patterns through std::regex, lengths
// in code points), to check what structured output generates.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>
#include <string>
#include <vector>

namespace pw {

inline int64_t CodePoints(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The subset's meaning, checked on a parsed value.
inline bool Validates(const nlohmann::ordered_json& v, const nlohmann::ordered_json& s) {
  using Json = nlohmann::ordered_json;
  if (s.is_boolean()) return s.get<bool>();
  if (s.contains("const") && v != s["const"]) return false;
  if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end()) return false;
  if (s.contains("anyOf")) {
    bool any = false;
    for (const Json& o : s["anyOf"]) any = any || Validates(v, o);
    if (!any) return false;
  }
  if (s.contains("type")) {
    std::vector<std::string> types;
    if (s["type"].is_string()) types.push_back(s["type"]);
    else for (const Json& t : s["type"]) types.push_back(t);
    bool ok = false;
    for (const std::string& t : types) {
      ok = ok || (t == "object" && v.is_object()) || (t == "array" && v.is_array()) ||
           (t == "string" && v.is_string()) || (t == "integer" && v.is_number_integer()) ||
           (t == "number" && v.is_number()) || (t == "boolean" && v.is_boolean()) || (t == "null" && v.is_null());
    }
    if (!ok) return false;
  }
  if (v.is_object() && s.contains("properties")) {
    for (const Json& r : s.value("required", Json::array())) {
      if (!v.contains(r.get<std::string>())) return false;
    }
    for (const auto& [k, sub] : v.items()) {
      if (!s["properties"].contains(k) || !Validates(sub, s["properties"][k])) return false;
    }
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
    if (s.contains("items")) {
      for (const Json& e : v) if (!Validates(e, s["items"])) return false;
    }
    if (s.contains("prefixItems")) {
      if (v.size() != s["prefixItems"].size()) return false;
      for (size_t i = 0; i < v.size(); ++i) if (!Validates(v[i], s["prefixItems"][i])) return false;
    }
  }
  if (v.is_string()) {
    const std::string t = v.get<std::string>();
    if (s.contains("minLength") && CodePoints(t) < s["minLength"].get<int64_t>()) return false;
    if (s.contains("maxLength") && CodePoints(t) > s["maxLength"].get<int64_t>()) return false;
    if (s.contains("pattern") && !std::regex_search(t, std::regex(s["pattern"].get<std::string>()))) return false;
  }
  if (v.is_number_integer()) {
    if (s.contains("minimum") && v.get<int64_t>() < s["minimum"].get<double>()) return false;
    if (s.contains("maximum") && v.get<int64_t>() > s["maximum"].get<double>()) return false;
  }
  return true;
}

}  // namespace pw
