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

#include "constrain/regex_parser.h"
#include "text/utf8.h"

namespace pw {
namespace {

using regex::Complement;
using regex::kInfinite;
using regex::Node;
using regex::ParseRegex;
using regex::Ranges;
using regex::RegexSyntax;

constexpr int64_t kMaxNfaStates = 2000000;

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
    PW_ASSIGN_OR_RETURN(RegexSyntax syntax, ParseRegex(pattern));
    const int root = syntax.root;
    NfaBuilder nfa(syntax.nodes);
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
  PW_ASSIGN_OR_RETURN(RegexSyntax syntax, ParseRegex(pattern));
  return Serialize(syntax.nodes, syntax.root, Complement(Ranges(excluded.begin(), excluded.end())));
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
