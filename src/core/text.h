// Small text helpers shared by every parser of user input (cost lists, TOML
// overrides, the schedule language): trimming and the edit distance behind
// "did you mean ...?" hints.
#pragma once

#include <cstddef>
#include <string_view>

namespace pw {

// `s` without leading and trailing whitespace (std::isspace).
std::string_view TrimSpaces(std::string_view s);

// Levenshtein distance (insertions, deletions, substitutions). O(|a| |b|)
// time, O(|b|) memory; callers bound the lengths of user words.
size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace pw
