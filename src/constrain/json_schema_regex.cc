#include "constrain/json_schema_regex.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "constrain/regex_dfa.h"

namespace pw {
namespace {

using Json = nlohmann::ordered_json;

// A JSON string's characters: anything but '"', '\' and control
// characters, or an escape (\uXXXX only for control characters: a lone
// surrogate escape would not parse).
const char kStringChar[] = R"((?:[^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u00[01][0-9A-Fa-f]))";
const char kNumber[] = R"(-?(?:0|[1-9][0-9]{0,15})(?:\.[0-9]{1,16})?(?:[eE][+-]?[0-9]{1,2})?)";
constexpr int64_t kIntegerLimit = 9999999999999999;  // 16 digits

std::string Group(const std::string& s) { return "(?:" + s + ")"; }

// `text` matched literally.
std::string Literal(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::string_view(".*+?()[]{}|\\^$/-").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// Non-negative integers of equal digit count, from a to b (a <= b).
std::string SameLength(const std::string& a, const std::string& b) {
  if (a == b) return a;
  const size_t n = a.size();
  if (n == 1) return std::string("[") + a[0] + "-" + b[0] + "]";
  if (a[0] == b[0]) return a[0] + SameLength(a.substr(1), b.substr(1));
  const std::string rest_a = a.substr(1), rest_b = b.substr(1);
  if (rest_a == std::string(n - 1, '0') && rest_b == std::string(n - 1, '9')) {
    return std::string("[") + a[0] + "-" + b[0] + "][0-9]{" + std::to_string(n - 1) + "}";
  }
  std::string alt = a[0] + SameLength(rest_a, std::string(n - 1, '9'));
  if (b[0] - a[0] > 1) {
    alt += std::string("|[") + static_cast<char>(a[0] + 1) + "-" + static_cast<char>(b[0] - 1) + "][0-9]{" +
           std::to_string(n - 1) + "}";
  }
  alt += "|" + (b[0] + SameLength(std::string(n - 1, '0'), rest_b));
  return Group(alt);
}

// Non-negative integers in [lo, hi], written without leading zeros.
std::string NonNegativeRange(int64_t lo, int64_t hi) {
  std::string alt;
  int64_t low_of_length = 0, high_of_length = 9;
  for (int digits = 1; digits <= 16; ++digits) {
    const int64_t a = std::max(lo, low_of_length), b = std::min(hi, high_of_length);
    if (a <= b) alt += (alt.empty() ? "" : "|") + SameLength(std::to_string(a), std::to_string(b));
    low_of_length = high_of_length + 1;
    high_of_length = high_of_length * 10 + 9;
  }
  return Group(alt);
}

class Compiler {
 public:
  Result<std::string> Compile(const Json& schema, const std::string& at, int depth) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) return Refuse(at, "", "the schema `false` admits no value");
      return AnyValue(kAnyDepth);
    }
    if (!schema.is_object()) return Refuse(at, "", "a schema must be an object or a boolean");
    if (depth > 64) return Refuse(at, "", "schemas nested deeper than 64 levels");
    PW_RETURN_IF_ERROR(CheckKeywords(schema, at));
    if (schema.contains("const")) return Literal(schema["const"].dump());
    if (schema.contains("enum")) return Enum(schema["enum"], at);
    if (schema.contains("anyOf")) return AnyOf(schema["anyOf"], at, depth);
    if (!schema.contains("type")) return Untyped(schema, at, depth);
    std::vector<std::string> types;
    PW_ASSIGN_OR_RETURN(types, TypeNames(schema["type"], at));
    std::string alt;
    for (const std::string& t : types) {
      PW_ASSIGN_OR_RETURN(std::string one, OfType(t, schema, at, depth));
      alt += (alt.empty() ? "" : "|") + one;
    }
    return Group(alt);
  }

 private:
  // Every keyword is one structured output supports (or an annotation);
  // const, enum and anyOf stand alone (annotations aside): what else
  // constrains the value would have to be applied to each option.
  static Status CheckKeywords(const Json& schema, const std::string& at) {
    for (const auto& [key, value] : schema.items()) {
      (void)value;
      static const std::set<std::string> kKeywords = {
          "type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems",
          "maxItems", "minLength", "maxLength", "pattern", "enum", "const", "anyOf", "minimum", "maximum"};
      if (!kKeywords.count(key) && !IsAnnotation(key)) {
        return Refuse(at, key, "is not supported by structured output (supported: type, properties, required, "
                               "items, prefixItems, minItems, maxItems, minLength, maxLength, pattern, enum, "
                               "const, anyOf, integer minimum/maximum)");
      }
    }
    for (const char* alone : {"const", "enum", "anyOf"}) {
      if (!schema.contains(alone)) continue;
      for (const auto& [key, value] : schema.items()) {
        (void)value;
        if (key != alone && !IsAnnotation(key)) {
          return Refuse(at, alone, "next to \"" + key + "\" is not supported; move \"" + key + "\" inside or drop it");
        }
      }
    }
    return Status::Ok();
  }

  static Result<std::string> Enum(const Json& values, const std::string& at) {
    if (!values.is_array() || values.empty()) return Refuse(at, "enum", "must be a non-empty array");
    std::string alt;
    for (const Json& v : values) alt += (alt.empty() ? "" : "|") + Literal(v.dump());
    return Group(alt);
  }

  Result<std::string> AnyOf(const Json& options, const std::string& at, int depth) {
    if (!options.is_array() || options.empty()) return Refuse(at, "anyOf", "must be a non-empty array");
    std::string alt;
    for (size_t i = 0; i < options.size(); ++i) {
      PW_ASSIGN_OR_RETURN(std::string one, Compile(options[i], at + "/anyOf/" + std::to_string(i), depth + 1));
      alt += (i ? "|" : "") + one;
    }
    return Group(alt);
  }

  // Without a type, a value of any type may be generated, and a keyword of
  // one type would not bind the others: say which.
  Result<std::string> Untyped(const Json& schema, const std::string& at, int depth) {
    if (schema.contains("properties")) return Object(schema, at, depth);
    if (schema.contains("items") || schema.contains("prefixItems")) return Array(schema, at, depth);
    for (const auto& [key, value] : schema.items()) {
      (void)value;
      if (!IsAnnotation(key) && key != "additionalProperties") {
        return Refuse(at, key, "needs \"type\" next to it (which type is it for?)");
      }
    }
    return AnyValue(kAnyDepth);
  }

  static Result<std::vector<std::string>> TypeNames(const Json& type, const std::string& at) {
    std::vector<std::string> types;
    if (type.is_string()) {
      types.push_back(type.get<std::string>());
    } else if (type.is_array()) {
      for (const Json& t : type) {
        if (!t.is_string()) return Refuse(at, "type", "must list type names");
        types.push_back(t.get<std::string>());
      }
    } else {
      return Refuse(at, "type", "must be a type name or a list of them");
    }
    return types;
  }

  static Status Refuse(const std::string& at, const std::string& key, const std::string& what) {
    const std::string where = "json_schema" + (at.empty() ? std::string() : " at " + at);
    return Status::InvalidArgument(where + ": " + (key.empty() ? "" : "\"" + key + "\" ") + what);
  }

  static bool IsAnnotation(const std::string& key) {
    static const std::set<std::string> kAnnotations = {"title", "description", "examples", "default",
                                                       "$schema", "$id", "$comment"};
    return kAnnotations.count(key) > 0;
  }

  Result<std::string> OfType(const std::string& t, const Json& schema, const std::string& at, int depth) {
    if (t == "object") return Object(schema, at, depth);
    if (t == "array") return Array(schema, at, depth);
    if (t == "string") return String(schema, at);
    if (t == "integer") return Integer(schema, at);
    if (t == "number") {
      if (schema.contains("minimum") || schema.contains("maximum")) {
        return Refuse(at, "minimum", "and \"maximum\" are supported for integers only");
      }
      return std::string(kNumber);
    }
    if (t == "boolean") return std::string("(?:true|false)");
    if (t == "null") return std::string("null");
    return Refuse(at, "type", "\"" + t + "\" is not a JSON Schema type");
  }

  Result<int64_t> Count(const Json& schema, const std::string& at, const char* key, int64_t otherwise) {
    if (!schema.contains(key)) return otherwise;
    const Json& v = schema[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 100000) {
      return Refuse(at, key, "must be an integer from 0 to 100000");
    }
    return v.get<int64_t>();
  }

  Result<std::string> String(const Json& schema, const std::string& at) {
    PW_ASSIGN_OR_RETURN(int64_t min, Count(schema, at, "minLength", 0));
    PW_ASSIGN_OR_RETURN(int64_t max, Count(schema, at, "maxLength", -1));
    if (max >= 0 && max < min) return Refuse(at, "maxLength", "is below minLength");
    if (schema.contains("pattern")) {
      if (schema.contains("minLength") || schema.contains("maxLength")) {
        return Refuse(at, "pattern", "with minLength/maxLength is not supported; put the length in the pattern");
      }
      if (!schema["pattern"].is_string()) return Refuse(at, "pattern", "must be a string");
      std::string pattern = schema["pattern"].get<std::string>();
      // JSON Schema patterns search; a generated value must match whole,
      // so an unanchored side may be anything.
      const bool head = !pattern.empty() && pattern.front() == '^';
      const bool tail = pattern.size() > 1 && pattern.back() == '$' && pattern[pattern.size() - 2] != '\\';
      if (head) pattern.erase(0, 1);
      if (tail) pattern.pop_back();
      Result<std::string> inside = RegexDfa::Restrict(pattern, {{'"', '"'}, {'\\', '\\'}, {0, 0x1F}});
      if (!inside.ok()) return Refuse(at, "pattern", inside.status().message());
      const std::string any = "(?:[^\"\\\\\\x00-\\x1F])*";
      return "\"" + std::string(head ? "" : any) + Group(*inside) + (tail ? "" : any) + "\"";
    }
    return "\"" + std::string(kStringChar) + "{" + std::to_string(min) + "," + (max >= 0 ? std::to_string(max) : "") +
           "}\"";
  }

  Result<std::string> Integer(const Json& schema, const std::string& at) {
    if (!schema.contains("minimum") && !schema.contains("maximum")) {
      return std::string("-?(?:0|[1-9][0-9]{0,15})");
    }
    int64_t lo = -kIntegerLimit, hi = kIntegerLimit;
    for (const char* key : {"minimum", "maximum"}) {
      if (!schema.contains(key)) continue;
      const Json& v = schema[key];
      if (!v.is_number() || std::fabs(v.get<double>()) > static_cast<double>(kIntegerLimit)) {
        return Refuse(at, key, "must be a number within 16 digits");
      }
      const bool minimum = std::string(key) == "minimum";
      if (v.is_number_integer()) {  // exact: a double would round 16-digit bounds
        (minimum ? lo : hi) = v.get<int64_t>();
      } else {
        (minimum ? lo : hi) = static_cast<int64_t>(minimum ? std::ceil(v.get<double>()) : std::floor(v.get<double>()));
      }
    }
    if (lo > hi) return Refuse(at, "minimum", "is above maximum");
    std::string alt;
    if (hi >= 0) alt = NonNegativeRange(std::max<int64_t>(lo, 0), hi);
    if (lo < 0) alt += (alt.empty() ? "" : "|") + ("-" + NonNegativeRange(std::max<int64_t>(1, -std::min<int64_t>(hi, -1)), -lo));
    return Group(alt);
  }

  Result<std::string> Array(const Json& schema, const std::string& at, int depth) {
    PW_ASSIGN_OR_RETURN(int64_t min, Count(schema, at, "minItems", 0));
    PW_ASSIGN_OR_RETURN(int64_t max, Count(schema, at, "maxItems", -1));
    if (max >= 0 && max < min) return Refuse(at, "maxItems", "is below minItems");
    if (schema.contains("prefixItems")) {
      const Json& prefix = schema["prefixItems"];
      if (!prefix.is_array()) return Refuse(at, "prefixItems", "must be an array");
      if (schema.contains("items") || schema.contains("minItems") || schema.contains("maxItems")) {
        return Refuse(at, "prefixItems", "with items/minItems/maxItems is not supported; a tuple is its prefixItems");
      }
      std::string out = "\\[";
      for (size_t i = 0; i < prefix.size(); ++i) {
        PW_ASSIGN_OR_RETURN(std::string item, Compile(prefix[i], at + "/prefixItems/" + std::to_string(i), depth + 1));
        out += (i ? "," : "") + item;
      }
      return out + "\\]";
    }
    std::string item;
    if (schema.contains("items")) {
      PW_ASSIGN_OR_RETURN(item, Compile(schema["items"], at + "/items", depth + 1));
    } else {
      item = AnyValue(kAnyDepth - 1);
    }
    if (max == 0) return std::string("\\[\\]");
    // [ item (, item){min-1, max-1} ] — or nothing inside when min is 0.
    const std::string more = "(?:," + item + "){" + std::to_string(std::max<int64_t>(min - 1, 0)) + "," +
                             (max >= 0 ? std::to_string(max - 1) : "") + "}";
    const std::string some = item + more;
    return "\\[" + (min == 0 ? Group(some) + "?" : some) + "\\]";
  }

  Result<std::string> Object(const Json& schema, const std::string& at, int depth) {
    if (!schema.contains("properties")) {
      if (schema.contains("required")) return Refuse(at, "required", "needs \"properties\" naming those keys");
      return AnyObject(kAnyDepth - 1);
    }
    const Json& props = schema["properties"];
    if (!props.is_object()) return Refuse(at, "properties", "must be an object");
    std::set<std::string> required;
    if (schema.contains("required")) {
      if (!schema["required"].is_array()) return Refuse(at, "required", "must be an array of names");
      for (const Json& r : schema["required"]) {
        if (!r.is_string() || !props.contains(r.get<std::string>())) {
          return Refuse(at, "required", "names " + r.dump() + ", which is not among the properties");
        }
        required.insert(r.get<std::string>());
      }
    }
    std::vector<std::pair<std::string, bool>> members;  // "key":value regex, required
    for (const auto& [name, sub] : props.items()) {
      PW_ASSIGN_OR_RETURN(std::string value, Compile(sub, at + "/properties/" + name, depth + 1));
      members.push_back({Literal(Json(name).dump()) + ":" + value, required.count(name) > 0});
    }
    // after[i]: members i.. when one was written before (each with a comma);
    // first[i]: the same when none was.
    const size_t n = members.size();
    std::vector<std::string> after(n + 1), first(n + 1);
    for (size_t i = n; i-- > 0;) {
      const auto& [member, is_required] = members[i];
      after[i] = is_required ? "," + member + after[i + 1] : Group("," + member) + "?" + after[i + 1];
      first[i] = is_required ? member + after[i + 1] : Group(member + after[i + 1] + "|" + first[i + 1]);
    }
    return "\\{" + first[0] + "\\}";
  }

  static std::string Scalar() {
    return Group("\"" + std::string(kStringChar) + "*\"|" + kNumber + "|true|false|null");
  }
  static std::string AnyObject(int depth) {
    const std::string value = AnyValue(depth);
    const std::string member = "\"" + std::string(kStringChar) + "*\":" + value;
    return "\\{" + Group(member + "(?:," + member + ")*") + "?\\}";
  }
  static std::string AnyArray(int depth) {
    const std::string value = AnyValue(depth);
    return "\\[" + Group(value + "(?:," + value + ")*") + "?\\]";
  }
  // Any JSON value with containers nested at most `depth` deep.
  static std::string AnyValue(int depth) {
    if (depth <= 0) return Scalar();
    return Group(Scalar() + "|" + AnyObject(depth - 1) + "|" + AnyArray(depth - 1));
  }
};

}  // namespace

Result<std::string> JsonSchemaRegex(const nlohmann::ordered_json& schema) {
  Compiler compiler;
  return compiler.Compile(schema, "", 0);
}

}  // namespace pw
