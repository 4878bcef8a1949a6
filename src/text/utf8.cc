#include "text/utf8.h"

#include <utf8proc.h>

namespace pw {

std::optional<size_t> FirstInvalidUtf8(std::string_view text) {
  const auto* s = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  const auto n = static_cast<utf8proc_ssize_t>(text.size());
  utf8proc_ssize_t i = 0;
  while (i < n) {
    if (s[i] < 0x80) {  // ASCII, the common case, without a call
      ++i;
      continue;
    }
    utf8proc_int32_t cp;
    // utf8proc refuses overlong forms, surrogates and code points past U+10FFFF.
    const utf8proc_ssize_t len = utf8proc_iterate(s + i, n - i, &cp);
    if (len <= 0) return static_cast<size_t>(i);
    i += len;
  }
  return std::nullopt;
}

void AppendUtf8(char32_t code_point, std::string& out) {
  utf8proc_uint8_t bytes[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(code_point), bytes);
  out.append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(n));
}

char32_t NextCodePoint(std::string_view text, size_t& pos) {
  utf8proc_int32_t cp = 0;
  const utf8proc_ssize_t len =
      utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data()) + pos,
                       static_cast<utf8proc_ssize_t>(text.size() - pos), &cp);
  pos += len > 0 ? static_cast<size_t>(len) : 1;
  return static_cast<char32_t>(cp);
}

}  // namespace pw
