#include "dsl/lexer.h"

namespace pw::dsl {
namespace {

bool IsControl(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A character as a message shows it: 'x', or "byte 0x07" for control bytes
// so that messages stay on one printable line.
std::string Shown(char c) {
  if (IsControl(c) || static_cast<unsigned char>(c) >= 0x80) {
    static constexpr char kHex[] = "0123456789abcdef";
    const auto u = static_cast<unsigned char>(c);
    return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 15];
  }
  return std::string("'") + c + "'";
}

}  // namespace

Status SyntaxError(std::string_view source, int line, int column, std::string_view what,
                   std::string_view expected, std::string_view hint) {
  std::string msg = std::string(source.empty() ? "<input>" : source) + ":" + std::to_string(line) + ":" +
                    std::to_string(column) + ": " + std::string(what);
  if (!expected.empty()) msg += "; expected " + std::string(expected);
  if (!hint.empty()) msg += "; hint: " + std::string(hint);
  return Status::InvalidArgument(std::move(msg));
}

Result<LexedLine> LexLine(std::string_view source, int number, std::string_view raw) {
  if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
  LexedLine out;
  out.number = number;
  size_t end_of_content = raw.size();
  size_t i = 0;
  while (i < raw.size()) {
    while (i < raw.size() && IsBlank(raw[i])) ++i;
    if (i >= raw.size()) break;
    if (raw[i] == '#') {
      end_of_content = i;
      break;
    }
    Token t;
    t.column = static_cast<int>(i) + 1;
    const size_t begin = i;
    const char quote = raw[i];
    if (quote == '\'' || quote == '"') {
      t.quoted = true;
      ++i;
      bool closed = false;
      while (i < raw.size()) {
        const char c = raw[i];
        if (c == quote) {
          closed = true;
          ++i;
          break;
        }
        if (quote == '"' && c == '\\') {
          if (i + 1 >= raw.size()) break;
          const char e = raw[i + 1];
          if (e == '\\' || e == '"') {
            t.value += e;
            i += 2;
          } else if (e == 'n') {
            t.value += '\n';
            i += 2;
          } else if (e == 't') {
            t.value += '\t';
            i += 2;
          } else if (e == 'x' && i + 3 < raw.size() && HexDigit(raw[i + 2]) >= 0 && HexDigit(raw[i + 3]) >= 0) {
            t.value += static_cast<char>(HexDigit(raw[i + 2]) * 16 + HexDigit(raw[i + 3]));
            i += 4;
          } else {
            return SyntaxError(source, number, static_cast<int>(i) + 1,
                               "unknown escape '\\" + (IsControl(e) ? Shown(e) : std::string(1, e)) + "' in a string",
                               "one of \\\\ \\\" \\n \\t \\xHH", "write a backslash as \\\\");
          }
          continue;
        }
        t.value += c;
        ++i;
      }
      if (!closed) {
        return SyntaxError(source, number, t.column, "unterminated string", std::string("a closing ") + quote,
                           "strings end on the line they start on");
      }
      if (i < raw.size() && !IsBlank(raw[i]) && raw[i] != '#') {
        return SyntaxError(source, number, static_cast<int>(i) + 1,
                           Shown(raw[i]) + " right after a closing quote", "a blank, a comment or the end of the line",
                           "separate tokens with blanks");
      }
    } else {
      while (i < raw.size() && !IsBlank(raw[i]) && raw[i] != '#') ++i;
      t.value = std::string(raw.substr(begin, i - begin));
    }
    t.text = raw.substr(begin, i - begin);
    out.tokens.push_back(std::move(t));
  }
  std::string_view content = raw.substr(0, end_of_content);
  while (!content.empty() && IsBlank(content.back())) content.remove_suffix(1);
  out.content = content;
  return out;
}

namespace {

// `text` as a double-quoted string with escapes.
std::string Quoted(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : text) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (IsControl(c)) {
      const auto u = static_cast<unsigned char>(c);
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace

std::string QuoteIfNeeded(std::string_view text) {
  bool bare = !text.empty() && !IsBlank(text.front()) && !IsBlank(text.back());
  for (char c : text) {
    if (c == '#' || c == '\'' || c == '"' || IsControl(c)) bare = false;
  }
  return bare ? std::string(text) : Quoted(text);
}

std::string QuoteToken(std::string_view text) {
  for (char c : text) {
    if (IsBlank(c)) return Quoted(text);
  }
  return QuoteIfNeeded(text);
}

}  // namespace pw::dsl
