// RegexDfa: a regular expression compiled to a deterministic automaton over
// the bytes of its UTF-8 text, for constrained decoding (infer/'s
// structured output): the decoder steps it one token's bytes at a time and
// asks, per state, which continuations can still end in a match. No
// Debian regex library exposes its automaton's states (PCRE2 and RE2 match
// whole subjects; PCRE2's partial matching rescans the whole text for
// every candidate), so this is the one automaton written here.
//
// The pattern must match the whole text (as JSON Schema's "pattern" does
// once anchored, and as Python's re.fullmatch). Syntax, ECMAScript-like:
//   literals (any UTF-8 character; escape  . * + ? ( ) [ ] { } | \ ^ $ /
//   and - with a backslash), . (any character but a line terminator:
//   \n \r U+2028 U+2029), classes [abc] [a-z] [^...] with ranges over
//   code points ([] matches nothing, [^] anything), \d \D \w \W, \s \S
//   (ECMAScript's: Unicode spaces too), \n \r \t \f \v \0, \xHH, \uHHHH,
//   groups ( ) and (?: ), alternation |, quantifiers * + ? {n} {n,} {n,m}
//   (a lazy ? after one is accepted and means the same here: the automaton
//   decides membership, not which match), ^ at the start and $ at the end
//   (no-ops: matches are whole).
// Backreferences, lookaround, named groups, flags and groups nested more
// than 256 deep are refused with InvalidArgument naming the offset. Texts are UTF-8: "." and negated
// classes match whole characters (U+0000..U+10FFFF but surrogates), never
// half of one.
//
// Every state kept is live: some continuation from it reaches a match.
// Next returns kDead when a byte leaves that set, so "can this text still
// become a match" is "walking it never hits kDead".
//
// Thread-safety: immutable after Compile. Failure: InvalidArgument for a
// pattern outside the syntax, FailedPrecondition when the automaton would
// exceed max_states (a pattern like (a|b)*a(a|b){20} grows exponentially).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace pw {

class RegexDfa {
 public:
  static constexpr int32_t kDead = -1;

  static Result<RegexDfa> Compile(std::string_view pattern, int64_t max_states = 200000);

  int32_t start() const { return start_; }  // kDead when nothing matches
  // The state after `byte` from `state` (a live state), or kDead.
  int32_t Next(int32_t state, uint8_t byte) const {
    return table_[static_cast<size_t>(state) * num_classes_ + byte_class_[byte]];
  }
  // The state after `bytes`, or kDead as soon as one leaves the live set.
  int32_t Walk(int32_t state, std::string_view bytes) const;
  // Whether the text read so far is a whole match.
  bool Accepting(int32_t state) const { return accepting_[static_cast<size_t>(state)]; }
  // Whether some non-empty continuation is possible from `state`.
  bool CanContinue(int32_t state) const { return can_continue_[static_cast<size_t>(state)]; }
  // Whether `text` matches as a whole.
  bool FullMatch(std::string_view text) const;

  int64_t num_states() const { return static_cast<int64_t>(accepting_.size()); }

  // `pattern` rewritten in the same syntax so that no character in
  // `excluded` (inclusive code point ranges) can match anywhere in it: every
  // character set loses them (a JSON Schema "pattern" inside a JSON string,
  // where '"', '\' and control characters would need escapes). The
  // language is the pattern's minus every text holding an excluded
  // character. Compile's InvalidArgument for a bad pattern.
  static Result<std::string> Restrict(std::string_view pattern,
                                      const std::vector<std::pair<uint32_t, uint32_t>>& excluded);

 private:
  int32_t start_ = kDead;
  int num_classes_ = 1;
  uint8_t byte_class_[256] = {};     // byte -> equivalence class
  std::vector<int32_t> table_;        // [state][class] -> state or kDead
  std::vector<bool> accepting_, can_continue_;
  friend class RegexDfaBuilder;
};

}  // namespace pw
