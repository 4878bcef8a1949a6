// Structured output over a tokenizer's vocabulary: which tokens may come
// next so that the generated text stays a prefix of a match of a pattern
// (a regex, or a JSON Schema compiled to one: constrain/json_schema_regex.h).
//
// ConstraintVocabulary holds every token's bytes (Tokenizer::TokenBytes)
// in a trie, built once per tokenizer. TokenConstraint pairs it with the
// pattern's automaton (constrain/regex_dfa.h): AllowedBits(state) walks the trie
// and the automaton together, pruning every branch the automaton leaves,
// and keeps the answer per state as a bitset over the vocabulary, one copy
// per distinct set (the states inside a long string all allow the same
// tokens) — a JSON Schema's automaton has hundreds to thousands of states,
// each met again and again, so after the first visit a step costs one
// lookup. A stop token whose bytes fit (the byte tokenizer's --end-byte)
// is among the allowed: the decoder takes stop tokens out unless
// Accepting(state), and adds them there.
//
// Thread-safety: immutable apart from the per-state cache, which its own
// lock guards; share one TokenConstraint across sequences and threads.
// Failure: InvalidArgument naming what is wrong (a tokenizer without
// per-token bytes, a pattern outside the syntax, a pattern nothing
// matches).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "constrain/regex_dfa.h"
#include "text/tokenizer.h"

namespace pw {

class ConstraintVocabulary {
 public:
  // Every id of `tokenizer` below `model_vocab` with bytes; specials (and
  // ids past the tokenizer) never match a pattern.
  static Result<std::shared_ptr<const ConstraintVocabulary>> Build(const Tokenizer& tokenizer, int64_t model_vocab);

  int64_t vocab_size() const { return vocab_size_; }
  const std::string& bytes(int32_t token) const { return bytes_[static_cast<size_t>(token)]; }

 private:
  friend class TokenConstraint;
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // byte -> node, sorted
    std::vector<int32_t> tokens;                          // tokens whose bytes end here
  };
  int64_t vocab_size_ = 0;
  std::vector<std::string> bytes_;  // per id; empty: never allowed
  std::vector<Node> trie_;          // node 0 is the root
};

class TokenConstraint {
 public:
  // The pattern of a prompt line: its "json_schema" (JSON text) compiled to
  // a regex, or its "regex" as given (exactly one non-empty). Errors name
  // which.
  static Result<std::string> PatternOf(const std::string& json_schema, const std::string& regex);
  // Whether PatternOf's pattern compiles (a line is checked when the file
  // is read, before any vocabulary exists). Errors name which.
  static Status Check(const std::string& json_schema, const std::string& regex);
  static Result<std::shared_ptr<const TokenConstraint>> Create(const std::string& pattern,
                                                               std::shared_ptr<const ConstraintVocabulary> vocab);

  using Bits = std::vector<uint64_t>;  // bit t set: token t allowed
  static bool Has(const Bits& bits, int64_t token) {
    return (bits[static_cast<size_t>(token) >> 6] >> (token & 63)) & 1;
  }

  int32_t start() const { return dfa_.start(); }
  // The tokens that keep the text a prefix of a match from `state` (a live
  // state): a bitset of vocab_size() bits, valid as long as the constraint.
  const Bits& AllowedBits(int32_t state) const;
  // The same as ascending ids (for tests and tools).
  std::vector<int32_t> Allowed(int32_t state) const;
  int64_t vocab_size() const { return vocab_->vocab_size(); }
  // The state after `token`, or RegexDfa::kDead when it is not allowed.
  int32_t Advance(int32_t state, int32_t token) const;
  bool Accepting(int32_t state) const { return dfa_.Accepting(state); }
  bool CanContinue(int32_t state) const { return dfa_.CanContinue(state); }
  int64_t num_states() const { return dfa_.num_states(); }

 private:
  TokenConstraint(RegexDfa dfa, std::shared_ptr<const ConstraintVocabulary> vocab)
      : dfa_(std::move(dfa)), vocab_(std::move(vocab)) {}
  RegexDfa dfa_;
  std::shared_ptr<const ConstraintVocabulary> vocab_;
  mutable std::mutex mu_;
  mutable std::unordered_map<int32_t, std::shared_ptr<const Bits>> allowed_;  // per state
  mutable std::unordered_map<uint64_t, std::vector<std::shared_ptr<const Bits>>> distinct_;  // by hash
};

// A job's constraints over one tokenizer: each distinct pattern compiled
// once, the vocabulary built on first use. Not thread-safe (one per rank's
// request builder); the constraints it hands out are.
class ConstraintCache {
 public:
  // `tokenizer` must outlive the cache.
  ConstraintCache(const Tokenizer& tokenizer, int64_t model_vocab) : tokenizer_(tokenizer), model_vocab_(model_vocab) {}
  // The constraint of a prompt's "json_schema" or "regex" (as PatternOf).
  Result<std::shared_ptr<const TokenConstraint>> Get(const std::string& json_schema, const std::string& regex);

 private:
  const Tokenizer& tokenizer_;
  int64_t model_vocab_;
  std::optional<Result<std::shared_ptr<const ConstraintVocabulary>>> vocab_;
  std::unordered_map<std::string, Result<std::shared_ptr<const TokenConstraint>>> compiled_;
};

}  // namespace pw
