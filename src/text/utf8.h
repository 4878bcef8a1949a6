// UTF-8 facts the tokenizers share: validation with the offending offset,
// and code-point encoding — thin wrappers over utf8proc (which also
// normalises for the BPE tokenizer) with an ASCII fast path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pw {

// The byte offset of the first byte that does not start or continue a
// well-formed UTF-8 sequence (overlong forms, surrogates and code points
// past U+10FFFF included), or nullopt when `text` is valid.
std::optional<size_t> FirstInvalidUtf8(std::string_view text);

// Appends the UTF-8 encoding of `code_point` (≤ U+10FFFF) to `out`.
void AppendUtf8(char32_t code_point, std::string& out);

// Decodes the code point starting at text[pos] (which must be valid UTF-8)
// and advances pos past it.
char32_t NextCodePoint(std::string_view text, size_t& pos);

}  // namespace pw
