#include "text/text_normalizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>

#include "text/utf8.h"

namespace pw {
namespace {

bool IsAscii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

utf8proc_option_t OptionsOf(UnicodeForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case UnicodeForm::kNfc: options |= UTF8PROC_COMPOSE; break;
    case UnicodeForm::kNfd: options |= UTF8PROC_DECOMPOSE; break;
    case UnicodeForm::kNfkc: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case UnicodeForm::kNfkd: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  return static_cast<utf8proc_option_t>(options);
}

bool IsUnicodeSpace(char32_t cp) {
  // Rust's char::is_whitespace (White_Space), which tokenizers' Strip uses.
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

std::string Lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[pos]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c));
      ++pos;
      continue;
    }
    AppendUtf8(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(NextCodePoint(text, pos)))), out);
  }
  return out;
}

std::string WithoutNonspacingMarks(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t start = pos;
    const char32_t cp = NextCodePoint(text, pos);
    if (cp >= 0x80 && utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_MN) continue;
    out.append(text.substr(start, pos - start));
  }
  return out;
}

std::string Stripped(std::string_view text, bool left, bool right) {
  size_t begin = 0, end = text.size();
  if (left) {
    while (begin < end) {
      size_t pos = begin;
      if (!IsUnicodeSpace(NextCodePoint(text, pos))) break;
      begin = pos;
    }
  }
  if (right) {
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
      size_t pos = start;
      if (!IsUnicodeSpace(NextCodePoint(text, pos))) break;
      end = start;
    }
  }
  return std::string(text.substr(begin, end - begin));
}

}  // namespace

std::string UnicodeNormalized(std::string_view text, UnicodeForm form) {
  if (IsAscii(text)) return std::string(text);
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          static_cast<utf8proc_ssize_t>(text.size()), &out, OptionsOf(form));
  if (n < 0) return std::string(text);  // input was validated; keep it unchanged rather than fail
  std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}

std::string ReplaceAll(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

std::string TextNormalizer::Apply(std::string_view text) const {
  std::string s(text);
  for (const NormalizerStep& step : steps_) {
    switch (step.kind) {
      case NormalizerStep::Kind::kPrepend:
        if (!s.empty()) s.insert(0, step.text);
        break;
      case NormalizerStep::Kind::kReplace:
        if (!step.from.empty() && s.find(step.from) != std::string::npos) s = ReplaceAll(s, step.from, step.text);
        break;
      case NormalizerStep::Kind::kUnicode: s = UnicodeNormalized(s, step.form); break;
      case NormalizerStep::Kind::kLowercase: s = Lowercase(s); break;
      case NormalizerStep::Kind::kStripAccents: s = WithoutNonspacingMarks(s); break;
      case NormalizerStep::Kind::kStrip: s = Stripped(s, step.left, step.right); break;
    }
  }
  return s;
}

}  // namespace pw
