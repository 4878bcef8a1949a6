#include "constrain/token_constraint.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "core/hash.h"
#include "constrain/json_schema_regex.h"

namespace pw {

Result<std::shared_ptr<const ConstraintVocabulary>> ConstraintVocabulary::Build(const Tokenizer& tokenizer,
                                                                                int64_t model_vocab) {
  auto vocab = std::make_shared<ConstraintVocabulary>();
  vocab->vocab_size_ = model_vocab;
  vocab->bytes_.resize(static_cast<size_t>(model_vocab));
  vocab->trie_.emplace_back();
  int64_t with_bytes = 0;
  for (int32_t id = 0; id < model_vocab && id < tokenizer.vocab_size(); ++id) {
    std::optional<std::string> bytes = tokenizer.TokenBytes(id);
    if (!bytes || bytes->empty()) continue;
    ++with_bytes;
    int32_t node = 0;
    for (char c : *bytes) {
      const uint8_t b = static_cast<uint8_t>(c);
      auto& kids = vocab->trie_[static_cast<size_t>(node)].children;
      auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(b, int32_t{0}),
                                 [](const auto& x, const auto& y) { return x.first < y.first; });
      if (it != kids.end() && it->first == b) {
        node = it->second;
      } else {
        const int32_t child = static_cast<int32_t>(vocab->trie_.size());
        kids.insert(it, {b, child});
        vocab->trie_.emplace_back();  // invalidates `kids`; not used after
        node = child;
      }
    }
    vocab->trie_[static_cast<size_t>(node)].tokens.push_back(id);
    vocab->bytes_[static_cast<size_t>(id)] = std::move(*bytes);
  }
  if (with_bytes == 0) {
    return Status::InvalidArgument("structured output needs each token's bytes, which this " +
                                   std::string(tokenizer.kind()) +
                                   " tokenizer does not give (byte-level and BPE tokenizers do)");
  }
  return std::shared_ptr<const ConstraintVocabulary>(std::move(vocab));
}

Result<std::string> TokenConstraint::PatternOf(const std::string& json_schema, const std::string& regex) {
  if (!json_schema.empty() && !regex.empty()) {
    return Status::InvalidArgument("both \"json_schema\" and \"regex\" are given; keep one");
  }
  if (!regex.empty()) return regex;
  const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(json_schema, nullptr, false);
  if (schema.is_discarded()) return Status::InvalidArgument("\"json_schema\" is not valid JSON");
  return JsonSchemaRegex(schema);
}

Status TokenConstraint::Check(const std::string& json_schema, const std::string& regex) {
  PW_ASSIGN_OR_RETURN(std::string pattern, PatternOf(json_schema, regex));
  Status compiled = RegexDfa::Compile(pattern).status();
  return regex.empty() ? compiled : compiled.WithContext("\"regex\"");
}

Result<std::shared_ptr<const TokenConstraint>> TokenConstraint::Create(
    const std::string& pattern, std::shared_ptr<const ConstraintVocabulary> vocab) {
  PW_ASSIGN_OR_RETURN(RegexDfa dfa, RegexDfa::Compile(pattern));
  if (dfa.start() == RegexDfa::kDead) {
    return Status::InvalidArgument("the constraint matches no text at all; nothing could be generated");
  }
  return std::shared_ptr<const TokenConstraint>(new TokenConstraint(std::move(dfa), std::move(vocab)));
}

const TokenConstraint::Bits& TokenConstraint::AllowedBits(int32_t state) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<const Bits>& slot = allowed_[state];
  if (slot) return *slot;
  auto bits = std::make_shared<Bits>((static_cast<size_t>(vocab_->vocab_size()) + 63) / 64, 0);
  // Depth-first over the trie, stepping the automaton along each edge.
  std::vector<std::pair<int32_t, int32_t>> stack = {{0, state}};  // (trie node, automaton state)
  const auto& trie = vocab_->trie_;
  while (!stack.empty()) {
    const auto [node, at] = stack.back();
    stack.pop_back();
    const ConstraintVocabulary::Node& n = trie[static_cast<size_t>(node)];
    if (node != 0) {
      for (int32_t t : n.tokens) (*bits)[static_cast<size_t>(t) >> 6] |= uint64_t{1} << (t & 63);
    }
    for (const auto& [byte, child] : n.children) {
      const int32_t next = dfa_.Next(at, byte);
      if (next != RegexDfa::kDead) stack.push_back({child, next});
    }
  }
  // One copy per distinct set.
  const uint64_t h = Fnv1a64(bits->data(), bits->size() * sizeof(uint64_t));
  std::vector<std::shared_ptr<const Bits>>& same_hash = distinct_[h];
  for (const std::shared_ptr<const Bits>& seen : same_hash) {
    if (*seen == *bits) {
      slot = seen;
      return *slot;
    }
  }
  same_hash.push_back(bits);
  slot = std::move(bits);
  return *slot;
}

std::vector<int32_t> TokenConstraint::Allowed(int32_t state) const {
  const Bits& bits = AllowedBits(state);
  std::vector<int32_t> ids;
  for (int32_t t = 0; t < vocab_->vocab_size(); ++t) {
    if (Has(bits, t)) ids.push_back(t);
  }
  return ids;
}

Result<std::shared_ptr<const TokenConstraint>> ConstraintCache::Get(const std::string& json_schema,
                                                                    const std::string& regex) {
  const std::string key = json_schema + '\0' + regex;
  auto it = compiled_.find(key);
  if (it != compiled_.end()) return it->second;
  if (!vocab_) vocab_ = ConstraintVocabulary::Build(tokenizer_, model_vocab_);
  auto made = [&]() -> Result<std::shared_ptr<const TokenConstraint>> {
    PW_RETURN_IF_ERROR(vocab_->status());
    PW_ASSIGN_OR_RETURN(std::string pattern, TokenConstraint::PatternOf(json_schema, regex));
    return TokenConstraint::Create(pattern, **vocab_);
  };
  return compiled_.emplace(key, made()).first->second;
}

int32_t TokenConstraint::Advance(int32_t state, int32_t token) const {
  if (token < 0 || token >= vocab_->vocab_size()) return RegexDfa::kDead;
  const std::string& bytes = vocab_->bytes(token);
  if (bytes.empty()) return RegexDfa::kDead;
  return dfa_.Walk(state, bytes);
}

}  // namespace pw
