// The regex syntax structured output accepts (constrain/regex_dfa.h: the
// ECMAScript subset JSON Schema patterns use), parsed into a tree of code
// point ranges, concatenations, alternations and repetitions that
// regex_dfa.cc compiles to a byte DFA.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace pw::regex {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;  // code point ranges, inclusive

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;
inline constexpr int kInfinite = -1;

struct Node {
  enum Kind { kRanges, kConcat, kAlt, kRepeat } kind = kConcat;
  Ranges ranges;
  std::vector<int> kids;
  int min = 0, max = 0;  // kRepeat; max kInfinite for no bound
};

struct RegexSyntax {
  std::vector<Node> nodes;
  int root = -1;  // -1: the empty pattern
};

// The tree of `pattern`. InvalidArgument "regex at offset N: what" for a
// pattern outside the subset (or not UTF-8).
Result<RegexSyntax> ParseRegex(std::string_view pattern);

// Sorted, merged, surrogates removed.
Ranges Normalize(Ranges r);
// Every code point (no surrogates) outside `r`.
Ranges Complement(const Ranges& r);

}  // namespace pw::regex
