// JsonSchemaRegex: a JSON Schema compiled to a regular expression (the
// syntax of constrain/regex_dfa.h) whose every match is a compact JSON text (no
// whitespace) that parses and validates against the schema — what
// structured output constrains decoding to.
//
// Supported, and enforced by the expression:
//   type (one or a list): object, array, string, number, integer, boolean,
//     null; a schema without type (or `true`, or {}) is any JSON value,
//     nested at most kAnyDepth deep;
//   object: properties, in the order written, the required ones always, the
//     others optionally; only declared properties are generated (so any
//     additionalProperties holds); an object without properties is any
//     object;
//   array: items, minItems, maxItems; prefixItems (tuples);
//   string: minLength, maxLength (in characters), pattern (over the
//     string's characters; texts that would need a JSON escape inside it
//     are not generated), enum, const;
//   integer and number: minimum and maximum for integers (as digit
//     patterns); numbers at most 16 integer digits, 16 fraction digits and
//     a 2-digit exponent (a decoder must be able to end them, and a double
//     must hold them: parsers refuse 1e999);
//   enum, const (any JSON values), anyOf.
// Annotations (title, description, examples, default, $schema, $id,
// $comment) are ignored. Anything else that constrains values (oneOf,
// allOf, not, $ref, format, multipleOf, uniqueItems, patternProperties,
// exclusive bounds, number bounds, ...) is refused with InvalidArgument
// naming the keyword and its JSON pointer, so that what is accepted is
// always honoured.
//
// Thread-safety: pure.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "core/status.h"

namespace pw {

inline constexpr int kAnyDepth = 3;

Result<std::string> JsonSchemaRegex(const nlohmann::ordered_json& schema);

}  // namespace pw
