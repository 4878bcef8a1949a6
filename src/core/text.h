// Small text helpers shared by every parser of user input (cost lists, TOML
// overrides, the schedule language): trimming and the edit distance behind
// "did you mean ...?" hints.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace pw {

// `s` without leading and trailing whitespace (std::isspace).
std::string_view TrimSpaces(std::string_view s);

// Levenshtein distance (insertions, deletions, substitutions). O(|a| |b|)
// time, O(|b|) memory; callers bound the lengths of user words.
size_t EditDistance(std::string_view a, std::string_view b);

// `s` for quoting inside a one-line message: control bytes (below 0x20,
// and 0x7f) written as \n, \r, \t or \xNN, so that a quoted cell or name
// cannot break the message's line or hide in it; other bytes (UTF-8
// included) as they are.
std::string PrintableText(std::string_view s);

// `x` as text that parses back to the same double ("%.17g"): for passing
// options on to child processes (std::to_string keeps 6 decimals, so 5e-7
// would arrive as 0).
std::string ExactDouble(double x);

}  // namespace pw
