#include "constrain/regex_parser.h"

#include <algorithm>
#include <optional>
#include <string>

#include "text/utf8.h"

namespace pw::regex {

Ranges Normalize(Ranges r) {
  Ranges cut;
  for (auto [lo, hi] : r) {
    if (lo <= 0xDFFF && hi >= 0xD800) {
      if (lo < 0xD800) cut.push_back({lo, 0xD7FF});
      if (hi > 0xDFFF) cut.push_back({0xE000, hi});
    } else {
      cut.push_back({lo, hi});
    }
  }
  std::sort(cut.begin(), cut.end());
  Ranges out;
  for (auto [lo, hi] : cut) {
    if (!out.empty() && lo <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, hi);
    } else {
      out.push_back({lo, hi});
    }
  }
  return out;
}

Ranges Complement(const Ranges& r) {
  Ranges n = Normalize(r), out;
  uint32_t next = 0;
  for (auto [lo, hi] : n) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return Normalize(out);
}

namespace {

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMAScript's \s: \t \n \v \f \r, space, and Unicode's spaces and line
// terminators (a JSON Schema validator reads a pattern's \s as these).
const Ranges kSpace = {{'\t', '\r'}, {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
                       {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
// What "." does not match: ECMAScript's line terminators.
const Ranges kLineTerminators = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};
constexpr int kMaxNesting = 256;

class Parser {
 public:
  explicit Parser(std::string_view p) : p_(p) {}

  Result<int> Parse() {
    if (const std::optional<size_t> bad = FirstInvalidUtf8(p_)) {
      pos_ = *bad;
      return Error("the pattern is not valid UTF-8");
    }
    PW_ASSIGN_OR_RETURN(int root, Alternation());
    if (pos_ < p_.size()) return Error("unmatched ')'");
    return root;
  }
  std::vector<Node> nodes;

 private:
  Status Error(const std::string& what) const {
    return Status::InvalidArgument("regex at offset " + std::to_string(pos_) + ": " + what);
  }
  bool More() const { return pos_ < p_.size(); }
  char Peek() const { return p_[pos_]; }

  int Add(Node n) {
    nodes.push_back(std::move(n));
    return static_cast<int>(nodes.size()) - 1;
  }
  int AddRanges(Ranges r) {
    Node n;
    n.kind = Node::kRanges;
    n.ranges = Normalize(std::move(r));
    return Add(std::move(n));
  }

  Result<int> Alternation() {
    Node alt;
    alt.kind = Node::kAlt;
    PW_ASSIGN_OR_RETURN(int first, Concatenation());
    alt.kids.push_back(first);
    while (More() && Peek() == '|') {
      ++pos_;
      PW_ASSIGN_OR_RETURN(int next, Concatenation());
      alt.kids.push_back(next);
    }
    return alt.kids.size() == 1 ? alt.kids[0] : Add(std::move(alt));
  }

  Result<int> Concatenation() {
    Node cat;
    cat.kind = Node::kConcat;
    while (More() && Peek() != '|' && Peek() != ')') {
      PW_ASSIGN_OR_RETURN(int piece, Repetition());
      if (piece >= 0) cat.kids.push_back(piece);
    }
    return cat.kids.size() == 1 ? cat.kids[0] : Add(std::move(cat));
  }

  // An atom and its quantifiers; -1 for an anchor (matches nothing extra).
  Result<int> Repetition() {
    if (Peek() == '*' || Peek() == '+' || Peek() == '?' || (Peek() == '{' && LooksLikeCount())) {
      return Error("nothing to repeat before '" + std::string(1, Peek()) + "'");
    }
    PW_ASSIGN_OR_RETURN(int atom, Atom());
    while (More()) {
      int min = 0, max = 0;
      if (Peek() == '*') {
        min = 0, max = kInfinite, ++pos_;
      } else if (Peek() == '+') {
        min = 1, max = kInfinite, ++pos_;
      } else if (Peek() == '?') {
        min = 0, max = 1, ++pos_;
      } else if (Peek() == '{' && LooksLikeCount()) {
        PW_RETURN_IF_ERROR(Count(min, max));
      } else {
        break;
      }
      if (More() && Peek() == '?') ++pos_;  // lazy: the same language
      if (atom < 0) return Error("an anchor cannot be repeated");
      Node rep;
      rep.kind = Node::kRepeat;
      rep.kids = {atom};
      rep.min = min;
      rep.max = max;
      atom = Add(std::move(rep));
    }
    return atom;
  }

  bool LooksLikeCount() const {
    size_t i = pos_ + 1;
    bool digits = false;
    while (i < p_.size() && std::isdigit(static_cast<unsigned char>(p_[i]))) ++i, digits = true;
    if (!digits) return false;
    if (i < p_.size() && p_[i] == ',') {
      ++i;
      while (i < p_.size() && std::isdigit(static_cast<unsigned char>(p_[i]))) ++i;
    }
    return i < p_.size() && p_[i] == '}';
  }

  Status Count(int& min, int& max) {
    ++pos_;  // '{'
    auto number = [&]() {
      int64_t v = 0;
      while (More() && std::isdigit(static_cast<unsigned char>(Peek()))) {
        v = std::min<int64_t>(v * 10 + (Peek() - '0'), 1 << 20);
        ++pos_;
      }
      return static_cast<int>(v);
    };
    min = number();
    max = min;
    if (Peek() == ',') {
      ++pos_;
      max = std::isdigit(static_cast<unsigned char>(Peek())) ? number() : kInfinite;
    }
    ++pos_;  // '}'
    if (max != kInfinite && max < min) return Error("{n,m} with m < n");
    return Status::Ok();
  }

  Result<int> Atom() {
    const char c = Peek();
    if (c == '(') {
      if (++depth_ > kMaxNesting) return Error("groups nested deeper than " + std::to_string(kMaxNesting));
      ++pos_;
      if (More() && Peek() == '?') {
        if (pos_ + 1 < p_.size() && p_[pos_ + 1] == ':') {
          pos_ += 2;
        } else {
          return Error("lookaround and named groups are not supported; use (...) or (?:...)");
        }
      }
      PW_ASSIGN_OR_RETURN(int inner, Alternation());
      if (!More() || Peek() != ')') return Error("missing ')'");
      ++pos_;
      --depth_;
      return inner;
    }
    if (c == '[') return Class();
    if (c == '.') {
      ++pos_;
      return AddRanges(Complement(kLineTerminators));
    }
    if (c == '^') {
      if (pos_ != 0) return Error("'^' is supported only at the start (matches are whole)");
      ++pos_;
      return -1;
    }
    if (c == '$') {
      if (pos_ + 1 != p_.size()) return Error("'$' is supported only at the end (matches are whole)");
      ++pos_;
      return -1;
    }
    if (c == '\\') {
      Ranges r;
      PW_RETURN_IF_ERROR(Escape(r, /*in_class=*/false));
      return AddRanges(std::move(r));
    }
    if (c == ')' || c == '|') return Error("unexpected '" + std::string(1, c) + "'");
    const uint32_t cp = CodePoint();
    return AddRanges({{cp, cp}});
  }

  // The pattern is valid UTF-8 (Parse checked).
  uint32_t CodePoint() { return static_cast<uint32_t>(NextCodePoint(p_, pos_)); }

  Result<uint32_t> Hex(int digits) {
    if (pos_ + static_cast<size_t>(digits) > p_.size()) return Error("truncated hex escape");
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char h = p_[pos_++];
      if (!std::isxdigit(static_cast<unsigned char>(h))) return Error("bad hex digit in escape");
      v = v * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (h | 0x20) - 'a' + 10);
    }
    return v;
  }

  // After a backslash: the ranges it stands for.
  Status Escape(Ranges& out, bool in_class) {
    ++pos_;
    if (!More()) return Error("pattern ends in a backslash");
    const char e = p_[pos_++];
    switch (e) {
      case 'd': out.insert(out.end(), kDigit.begin(), kDigit.end()); return Status::Ok();
      case 'D': { Ranges c = Complement(kDigit); out.insert(out.end(), c.begin(), c.end()); return Status::Ok(); }
      case 'w': out.insert(out.end(), kWord.begin(), kWord.end()); return Status::Ok();
      case 'W': { Ranges c = Complement(kWord); out.insert(out.end(), c.begin(), c.end()); return Status::Ok(); }
      case 's': out.insert(out.end(), kSpace.begin(), kSpace.end()); return Status::Ok();
      case 'S': { Ranges c = Complement(kSpace); out.insert(out.end(), c.begin(), c.end()); return Status::Ok(); }
      case 'n': out.push_back({'\n', '\n'}); return Status::Ok();
      case 'r': out.push_back({'\r', '\r'}); return Status::Ok();
      case 't': out.push_back({'\t', '\t'}); return Status::Ok();
      case 'f': out.push_back({'\f', '\f'}); return Status::Ok();
      case 'v': out.push_back({'\v', '\v'}); return Status::Ok();
      case '0': out.push_back({0, 0}); return Status::Ok();
      case 'b':
        if (in_class) { out.push_back({'\b', '\b'}); return Status::Ok(); }
        return Error("word boundaries (\\b) are not supported");
      case 'x': { PW_ASSIGN_OR_RETURN(uint32_t v, Hex(2)); out.push_back({v, v}); return Status::Ok(); }
      case 'u': {
        PW_ASSIGN_OR_RETURN(uint32_t v, Hex(4));
        if (v >= 0xD800 && v <= 0xDBFF && pos_ + 1 < p_.size() && p_[pos_] == '\\' && p_[pos_ + 1] == 'u') {
          pos_ += 2;
          PW_ASSIGN_OR_RETURN(uint32_t low, Hex(4));
          if (low < 0xDC00 || low > 0xDFFF) return Error("a high surrogate not followed by a low one");
          v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00);
        } else if (v >= 0xD800 && v <= 0xDFFF) {
          return Error("a lone surrogate escape");
        }
        out.push_back({v, v});
        return Status::Ok();
      }
      default:
        if (std::isalnum(static_cast<unsigned char>(e))) {
          return Error(std::string("unsupported escape \\") + e + " (backreferences and \\p{...} are not supported)");
        }
        --pos_;
        const uint32_t cp = CodePoint();  // an escaped punctuation or other character
        out.push_back({cp, cp});
        return Status::Ok();
    }
  }

  // One character of a class, or an escape's set.
  Status ClassItem(Ranges& out) {
    if (Peek() == '\\') return Escape(out, /*in_class=*/true);
    const uint32_t cp = CodePoint();
    out.push_back({cp, cp});
    return Status::Ok();
  }

  Result<int> Class() {
    ++pos_;  // '['
    const bool negate = More() && Peek() == '^';
    if (negate) ++pos_;
    Ranges r;
    while (true) {
      if (!More()) return Error("missing ']'");
      if (Peek() == ']') break;  // ECMAScript: [] matches nothing, [^] anything
      Ranges item;
      PW_RETURN_IF_ERROR(ClassItem(item));
      // A range a-b between two single characters.
      if (item.size() == 1 && item[0].first == item[0].second && pos_ + 1 < p_.size() && Peek() == '-' &&
          p_[pos_ + 1] != ']') {
        ++pos_;
        Ranges end;
        PW_RETURN_IF_ERROR(ClassItem(end));
        if (end.size() != 1 || end[0].first != end[0].second) return Error("a class range must end in one character");
        if (end[0].first < item[0].first) return Error("a class range out of order");
        item[0].second = end[0].first;
      }
      r.insert(r.end(), item.begin(), item.end());
    }
    ++pos_;  // ']'
    return AddRanges(negate ? Complement(r) : r);
  }

  std::string_view p_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<RegexSyntax> ParseRegex(std::string_view pattern) {
  Parser parser(pattern);
  PW_ASSIGN_OR_RETURN(int root, parser.Parse());
  return RegexSyntax{std::move(parser.nodes), root};
}

}  // namespace pw::regex
