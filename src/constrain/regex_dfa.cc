// Pattern -> syntax tree (code point ranges, concatenation, alternation,
// repetition) -> Thompson NFA over bytes (each code point range expanded to
// the UTF-8 byte-range sequences that encode it) -> subset construction
// over byte equivalence classes -> live states only.
#include "constrain/regex_dfa.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "text/utf8.h"

namespace pw {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;  // code point ranges, inclusive

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr int64_t kMaxNfaStates = 2000000;
constexpr int kInfinite = -1;

// Sorted, merged, surrogates removed.
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

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMAScript's \s: \t \n \v \f \r, space, and Unicode's spaces and line
// terminators (a JSON Schema validator reads a pattern's \s as these).
const Ranges kSpace = {{'\t', '\r'}, {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
                       {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
// What "." does not match: ECMAScript's line terminators.
const Ranges kLineTerminators = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};
constexpr int kMaxNesting = 256;

struct Node {
  enum Kind { kRanges, kConcat, kAlt, kRepeat } kind = kConcat;
  Ranges ranges;
  std::vector<int> kids;
  int min = 0, max = 0;  // kRepeat; max kInfinite for no bound
};

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


// Byte-range sequences whose union encodes exactly [lo, hi] (the
// utf8-ranges construction: split at encoding-length boundaries, then
// where a continuation byte would not span its whole 0x80..0xBF).
void Utf8Sequences(uint32_t lo, uint32_t hi, std::vector<std::vector<std::pair<uint8_t, uint8_t>>>& out) {
  for (uint32_t edge : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= edge && hi > edge) {
      Utf8Sequences(lo, edge, out);
      Utf8Sequences(edge + 1, hi, out);
      return;
    }
  }
  if (hi <= 0x7F) {
    out.push_back({{static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)}});
    return;
  }
  for (int i = 1; i < 4; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        Utf8Sequences(lo, lo | m, out);
        Utf8Sequences((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        Utf8Sequences(lo, (hi & ~m) - 1, out);
        Utf8Sequences(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::string a, b;
  AppendUtf8(static_cast<char32_t>(lo), a);
  AppendUtf8(static_cast<char32_t>(hi), b);
  std::vector<std::pair<uint8_t, uint8_t>> seq;
  for (size_t i = 0; i < a.size(); ++i) seq.push_back({static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i])});
  out.push_back(seq);
}

struct NfaState {
  int next = -1;  // byte edge target, -1 for none
  uint8_t lo = 0, hi = 0;
  std::vector<int> eps;
};

class NfaBuilder {
 public:
  explicit NfaBuilder(const std::vector<Node>& nodes) : nodes_(nodes) {}
  std::vector<NfaState> states;

  int New() {
    states.emplace_back();
    return static_cast<int>(states.size()) - 1;
  }

  // Adds `node` reachable from state `in`; returns its exit state.
  Result<int> Emit(int node, int in) {
    // Repeating an empty group adds no states; count the work as well.
    if (static_cast<int64_t>(states.size()) > kMaxNfaStates || ++emitted_ > 4 * kMaxNfaStates) {
      return Status::FailedPrecondition("regex: the automaton grew past " + std::to_string(kMaxNfaStates) +
                                       " states (large {n,m} counts?); simplify the pattern");
    }
    const Node& n = nodes_[static_cast<size_t>(node)];
    switch (n.kind) {
      case Node::kRanges: {
        const int out = New();
        std::vector<std::vector<std::pair<uint8_t, uint8_t>>> seqs;
        for (auto [lo, hi] : n.ranges) Utf8Sequences(lo, hi, seqs);
        for (const auto& seq : seqs) {
          int at = New();
          states[static_cast<size_t>(in)].eps.push_back(at);
          for (size_t i = 0; i < seq.size(); ++i) {
            const int to = i + 1 == seq.size() ? out : New();
            states[static_cast<size_t>(at)].lo = seq[i].first;
            states[static_cast<size_t>(at)].hi = seq[i].second;
            states[static_cast<size_t>(at)].next = to;
            at = to;
          }
        }
        return out;
      }
      case Node::kConcat: {
        int at = in;
        for (int kid : n.kids) {
          PW_ASSIGN_OR_RETURN(at, Emit(kid, at));
        }
        return at;
      }
      case Node::kAlt: {
        const int out = New();
        for (int kid : n.kids) {
          const int start = New();
          states[static_cast<size_t>(in)].eps.push_back(start);
          PW_ASSIGN_OR_RETURN(int end, Emit(kid, start));
          states[static_cast<size_t>(end)].eps.push_back(out);
        }
        return out;
      }
      case Node::kRepeat: {
        int at = in;
        for (int i = 0; i < n.min; ++i) {
          PW_ASSIGN_OR_RETURN(at, Emit(n.kids[0], at));
        }
        if (n.max == kInfinite) {
          const int loop = New();
          states[static_cast<size_t>(at)].eps.push_back(loop);
          PW_ASSIGN_OR_RETURN(int end, Emit(n.kids[0], loop));
          states[static_cast<size_t>(end)].eps.push_back(loop);
          return loop;
        }
        // x{0,k} as (x(x(x)?)?)?: every copy may leave to one exit, so a
        // closure holds a copy's start and the exit, not every copy left
        // (x?x?x? made the subset construction quadratic in k).
        const int exit = New();
        for (int i = n.min; i < n.max; ++i) {
          states[static_cast<size_t>(at)].eps.push_back(exit);
          PW_ASSIGN_OR_RETURN(at, Emit(n.kids[0], at));
        }
        states[static_cast<size_t>(at)].eps.push_back(exit);
        return exit;
      }
    }
    return in;
  }

 private:
  const std::vector<Node>& nodes_;
  int64_t emitted_ = 0;
};

}  // namespace

// Regex → NFA → DFA in named steps: byte classes, subset construction
// (over epsilon closures), then pruning the states that cannot reach an
// accepting one and renumbering the rest.
class RegexDfaBuilder {
 public:
  static Result<RegexDfa> Build(std::string_view pattern, int64_t max_states) {
    Parser parser(pattern);
    PW_ASSIGN_OR_RETURN(int root, parser.Parse());
    NfaBuilder nfa(parser.nodes);
    const int start = nfa.New();
    int accept = start;
    if (root >= 0) {
      PW_ASSIGN_OR_RETURN(accept, nfa.Emit(root, start));
    }
    RegexDfaBuilder builder(nfa.states, accept, max_states);
    builder.FindByteClasses();
    PW_ASSIGN_OR_RETURN(int32_t first, builder.ConstructSubsets(start));
    builder.KeepLiveStates(first);
    return std::move(builder.dfa_);
  }

 private:
  RegexDfaBuilder(const std::vector<NfaState>& states, int accept, int64_t max_states)
      : s_(states), accept_(accept), max_states_(max_states), mark_(states.size(), 0) {}

  // Byte classes: bytes no edge tells apart share one.
  void FindByteClasses() {
    std::vector<bool> boundary(257, false);
    boundary[0] = true;
    for (const NfaState& st : s_) {
      if (st.next < 0) continue;
      boundary[st.lo] = true;
      boundary[static_cast<size_t>(st.hi) + 1] = true;
    }
    int cls = -1;
    for (int b = 0; b < 256; ++b) {
      if (boundary[static_cast<size_t>(b)]) {
        ++cls;
        representative_.push_back(static_cast<uint8_t>(b));
      }
      dfa_.byte_class_[b] = static_cast<uint8_t>(cls);
    }
    dfa_.num_classes_ = cls + 1;
  }

  // The epsilon closure of `set`, as the sorted states that tell sets apart
  // (those with a byte edge, and the accept state). `mark_` stamps the
  // states seen by this call.
  std::vector<int> Closure(const std::vector<int>& set) {
    ++stamp_;
    std::vector<int> stack, out;
    for (int x : set) {
      if (mark_[static_cast<size_t>(x)] != stamp_) {
        mark_[static_cast<size_t>(x)] = stamp_;
        stack.push_back(x);
      }
    }
    while (!stack.empty()) {
      const int x = stack.back();
      stack.pop_back();
      out.push_back(x);
      for (int e : s_[static_cast<size_t>(x)].eps) {
        if (mark_[static_cast<size_t>(e)] != stamp_) {
          mark_[static_cast<size_t>(e)] = stamp_;
          stack.push_back(e);
        }
      }
    }
    std::vector<int> key;
    for (int x : out) {
      if (s_[static_cast<size_t>(x)].next >= 0 || x == accept_) key.push_back(x);
    }
    std::sort(key.begin(), key.end());
    return key;
  }

  // The DFA state of an NFA state set (kDead for the empty set), new ones
  // numbered in order of discovery.
  Result<int32_t> Intern(std::vector<int> set) {
    if (set.empty()) return RegexDfa::kDead;
    auto it = ids_.find(set);
    if (it != ids_.end()) return it->second;
    if (static_cast<int64_t>(sets_.size()) >= max_states_) {
      return Status::FailedPrecondition("regex: the automaton needs more than " + std::to_string(max_states_) +
                                       " states; simplify the pattern (bound fewer repetitions)");
    }
    const int32_t id = static_cast<int32_t>(sets_.size());
    ids_.emplace(set, id);
    sets_.push_back(std::move(set));
    return id;
  }

  // Subset construction from `start`: every discovered state's move on each
  // byte class. Returns the start state.
  Result<int32_t> ConstructSubsets(int start) {
    PW_ASSIGN_OR_RETURN(int32_t first, Intern(Closure(std::vector<int>{start})));
    for (size_t i = 0; i < sets_.size(); ++i) {
      for (int c = 0; c < dfa_.num_classes_; ++c) {
        const uint8_t b = representative_[static_cast<size_t>(c)];
        std::vector<int> moved;
        for (int x : sets_[i]) {
          const NfaState& st = s_[static_cast<size_t>(x)];
          if (st.next >= 0 && st.lo <= b && b <= st.hi) moved.push_back(st.next);
        }
        PW_ASSIGN_OR_RETURN(int32_t to, Intern(moved.empty() ? std::vector<int>{} : Closure(moved)));
        table_.push_back(to);
      }
    }
    return first;
  }

  bool Accepting(size_t state) const { return std::binary_search(sets_[state].begin(), sets_[state].end(), accept_); }

  // The states from which an accepting one is reachable.
  std::vector<bool> LiveStates() const {
    const size_t n = sets_.size(), C = static_cast<size_t>(dfa_.num_classes_);
    std::vector<bool> live(n, false);
    for (size_t i = 0; i < n; ++i) live[i] = Accepting(i);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < n; ++i) {
        if (live[i]) continue;
        for (size_t c = 0; c < C; ++c) {
          const int32_t to = table_[i * C + c];
          if (to != RegexDfa::kDead && live[static_cast<size_t>(to)]) {
            live[i] = changed = true;
            break;
          }
        }
      }
    }
    return live;
  }

  // The DFA of the live states only, renumbered in order, from `first`.
  void KeepLiveStates(int32_t first) {
    const std::vector<bool> live = LiveStates();
    const size_t n = sets_.size(), C = static_cast<size_t>(dfa_.num_classes_);
    std::vector<int32_t> renumber(n, RegexDfa::kDead);
    int32_t kept = 0;
    for (size_t i = 0; i < n; ++i) {
      if (live[i]) renumber[i] = kept++;
    }
    dfa_.start_ = first == RegexDfa::kDead ? RegexDfa::kDead : renumber[static_cast<size_t>(first)];
    dfa_.table_.assign(static_cast<size_t>(kept) * C, RegexDfa::kDead);
    dfa_.accepting_.assign(static_cast<size_t>(kept), false);
    dfa_.can_continue_.assign(static_cast<size_t>(kept), false);
    for (size_t i = 0; i < n; ++i) {
      if (!live[i]) continue;
      const size_t to_row = static_cast<size_t>(renumber[i]);
      dfa_.accepting_[to_row] = Accepting(i);
      for (size_t c = 0; c < C; ++c) {
        const int32_t to = table_[i * C + c];
        const int32_t mapped = to == RegexDfa::kDead ? RegexDfa::kDead : renumber[static_cast<size_t>(to)];
        dfa_.table_[to_row * C + c] = mapped;
        if (mapped != RegexDfa::kDead) dfa_.can_continue_[to_row] = true;
      }
    }
  }

  const std::vector<NfaState>& s_;
  const int accept_;
  const int64_t max_states_;
  RegexDfa dfa_;
  std::vector<uint8_t> representative_;  // a byte of each class
  std::vector<uint32_t> mark_;
  uint32_t stamp_ = 0;
  std::map<std::vector<int>, int32_t> ids_;  // NFA state set → DFA state
  std::vector<std::vector<int>> sets_;       // DFA state → NFA state set
  std::vector<int32_t> table_;               // [state][class] → state, before pruning
};

Result<RegexDfa> RegexDfa::Compile(std::string_view pattern, int64_t max_states) {
  return RegexDfaBuilder::Build(pattern, max_states);
}

namespace {

// A code point as the syntax writes it inside a class.
std::string ClassChar(uint32_t cp) {
  char buf[16];
  if (cp < 0x80 && std::isalnum(static_cast<int>(cp))) return std::string(1, static_cast<char>(cp));
  if (cp <= 0xFFFF) {
    std::snprintf(buf, sizeof buf, "\\u%04X", cp);
    return buf;
  }
  const uint32_t v = cp - 0x10000;
  std::snprintf(buf, sizeof buf, "\\u%04X\\u%04X", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
  return buf;
}

std::string Serialize(const std::vector<Node>& nodes, int node, const Ranges& allowed) {
  if (node < 0) return "";
  const Node& n = nodes[static_cast<size_t>(node)];
  switch (n.kind) {
    case Node::kRanges: {
      // Intersect with the allowed ranges (both sorted and merged).
      std::string out = "[";
      bool any = false;
      for (auto [lo, hi] : n.ranges) {
        for (auto [alo, ahi] : allowed) {
          const uint32_t l = std::max(lo, alo), h = std::min(hi, ahi);
          if (l > h) continue;
          out += ClassChar(l);
          if (h > l) out += "-" + ClassChar(h);
          any = true;
        }
      }
      return any ? out + "]" : "[^\\s\\S]";
    }
    case Node::kConcat: {
      std::string out;
      for (int kid : n.kids) out += "(?:" + Serialize(nodes, kid, allowed) + ")";
      return out;
    }
    case Node::kAlt: {
      std::string out = "(?:";
      for (size_t i = 0; i < n.kids.size(); ++i) out += (i ? "|" : "") + Serialize(nodes, n.kids[i], allowed);
      return out + ")";
    }
    case Node::kRepeat:
      return "(?:" + Serialize(nodes, n.kids[0], allowed) + "){" + std::to_string(n.min) + "," +
             (n.max == kInfinite ? "" : std::to_string(n.max)) + "}";
  }
  return "";
}

}  // namespace

Result<std::string> RegexDfa::Restrict(std::string_view pattern,
                                       const std::vector<std::pair<uint32_t, uint32_t>>& excluded) {
  Parser parser(pattern);
  PW_ASSIGN_OR_RETURN(int root, parser.Parse());
  return Serialize(parser.nodes, root, Complement(Ranges(excluded.begin(), excluded.end())));
}

int32_t RegexDfa::Walk(int32_t state, std::string_view bytes) const {
  for (char c : bytes) {
    if (state == kDead) return kDead;
    state = Next(state, static_cast<uint8_t>(c));
  }
  return state;
}

bool RegexDfa::FullMatch(std::string_view text) const {
  if (start_ == kDead) return false;
  const int32_t end = Walk(start_, text);
  return end != kDead && Accepting(end);
}

}  // namespace pw
