// StringMap: an unordered_map keyed by std::string that is searched with a
// std::string_view, without building a string per lookup (the tokenizers'
// vocabularies and word caches are searched for every word of a text).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace pw {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

}  // namespace pw
