// TokenConstraint over real vocabularies: the byte tokenizer (one token a
// byte) and GPT-2's BPE (50,257 tokens of 1 to many bytes): the allowed
// set is exactly the tokens whose bytes keep the text a prefix of a match
// (checked against walking every token), and random walks through allowed
// tokens always end in texts that match (and, for a JSON Schema, parse);
// specials never appear; a tokenizer without per-token bytes is refused.
#include "constrain/token_constraint.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "text/byte_tokenizer.h"
#include "text/text_test_util.h"

namespace pw {
namespace {

std::shared_ptr<const TokenConstraint> Make(const Tokenizer& t, const std::string& json_schema,
                                            const std::string& regex) {
  auto vocab = ConstraintVocabulary::Build(t, t.vocab_size());
  EXPECT_TRUE(vocab.ok()) << vocab.status().ToString();
  auto pattern = TokenConstraint::PatternOf(json_schema, regex);
  EXPECT_TRUE(pattern.ok()) << pattern.status().ToString();
  auto c = TokenConstraint::Create(*pattern, *vocab);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : nullptr;
}

TEST(TokenConstraintTest, ByteTokensFollowTheAutomaton) {
  ByteTokenizer bytes;
  auto c = Make(bytes, "", "a[bc]d?");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->Allowed(c->start()), std::vector<int32_t>{'a'});
  const int32_t after_a = c->Advance(c->start(), 'a');
  EXPECT_EQ(c->Allowed(after_a), (std::vector<int32_t>{'b', 'c'}));
  EXPECT_EQ(c->Advance(after_a, 'd'), RegexDfa::kDead);
  const int32_t after_ab = c->Advance(after_a, 'b');
  EXPECT_TRUE(c->Accepting(after_ab));
  EXPECT_TRUE(c->CanContinue(after_ab));
  EXPECT_FALSE(c->CanContinue(c->Advance(after_ab, 'd')));
}

TEST(TokenConstraintTest, BpeAllowedSetsAreExactAndWalksEndInValidJson) {
  auto gpt2 = ExampleTokenizer("gpt2");
  ASSERT_NE(gpt2, nullptr);
  const std::string schema =
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":10},"n":{"type":"integer","minimum":0,"maximum":99},"tags":{"type":"array","items":{"enum":["a","bc"]},"maxItems":3}},"required":["name","n"]})";
  auto c = Make(*gpt2, schema, "");
  ASSERT_NE(c, nullptr);
  auto vocab = ConstraintVocabulary::Build(*gpt2, gpt2->vocab_size()).value();
  std::mt19937 rng(3);
  int walks = 0;
  for (int w = 0; w < 40; ++w) {
    std::vector<int32_t> ids;
    int32_t s = c->start();
    bool ended = false;
    for (int step = 0; step < 200 && !ended; ++step) {
      const std::vector<int32_t>& allowed = c->Allowed(s);
      if (step < 3) {  // the allowed set against every token of the vocabulary
        std::vector<int32_t> brute;
        for (int32_t id = 0; id < gpt2->vocab_size(); ++id) {
          if (c->Advance(s, id) != RegexDfa::kDead) brute.push_back(id);
        }
        ASSERT_EQ(allowed, brute) << "step " << step;
      }
      if (c->Accepting(s) && (!c->CanContinue(s) || rng() % 3 == 0)) {
        ended = true;
        break;
      }
      ASSERT_FALSE(allowed.empty());
      const int32_t token = allowed[rng() % allowed.size()];
      EXPECT_NE(token, 50256) << "<|endoftext|> is special: never part of a match";
      ids.push_back(token);
      s = c->Advance(s, token);
      ASSERT_NE(s, RegexDfa::kDead);
    }
    if (!ended) continue;
    ++walks;
    const std::string text = gpt2->Decode(ids).value();
    nlohmann::json value;
    ASSERT_NO_THROW(value = nlohmann::json::parse(text)) << text;
    EXPECT_TRUE(value.contains("name") && value.contains("n")) << text;
    EXPECT_LE(value["n"].get<int>(), 99) << text;
  }
  EXPECT_GT(walks, 30);
  // Several bytes per token: the walk may take '{"' or '":' in one step.
  bool multibyte = false;
  for (int32_t id : c->Allowed(c->start())) multibyte = multibyte || vocab->bytes(id).size() > 1;
  EXPECT_TRUE(multibyte);
}

class NoBytesTokenizer final : public Tokenizer {
 public:
  int64_t vocab_size() const override { return 10; }
  std::optional<int32_t> TokenId(const std::string&) const override { return std::nullopt; }
  std::string_view kind() const override { return "sentencepiece"; }

 protected:
  Result<std::vector<int32_t>> EncodeText(std::string_view) const override { return std::vector<int32_t>{}; }
  Result<std::string> DecodeIds(std::span<const int32_t>, bool) const override { return std::string(); }
};

TEST(TokenConstraintTest, RefusalsSayWhat) {
  NoBytesTokenizer none;
  auto vocab = ConstraintVocabulary::Build(none, 10);
  ASSERT_FALSE(vocab.ok());
  EXPECT_NE(vocab.status().message().find("sentencepiece tokenizer does not give"), std::string::npos);
  EXPECT_NE(TokenConstraint::PatternOf("{}", "a").status().message().find("keep one"), std::string::npos);
  EXPECT_NE(TokenConstraint::Check("", "(a").message().find("\"regex\""), std::string::npos);
  EXPECT_NE(TokenConstraint::PatternOf("{nope", "").status().message().find("not valid JSON"), std::string::npos);
  ByteTokenizer bytes;
  auto nothing = TokenConstraint::Create("[^\\s\\S]", ConstraintVocabulary::Build(bytes, 256).value());
  ASSERT_FALSE(nothing.ok());
  EXPECT_NE(nothing.status().message().find("matches no text"), std::string::npos);
}

}  // namespace
}  // namespace pw

namespace pw {
namespace {

TEST(ConstraintCacheTest, CompilesEachPatternOnceAndKeepsErrors) {
  ByteTokenizer bytes;
  ConstraintCache cache(bytes, 256);
  auto a = cache.Get("", "(yes|no)");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(cache.Get("", "(yes|no)").value().get(), a->get());  // the same one
  auto bad = cache.Get(R"({"oneOf":[]})", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("oneOf"), std::string::npos);
  NoBytesTokenizer none;
  ConstraintCache without(none, 10);
  EXPECT_FALSE(without.Get("", "a").ok());
}

}  // namespace
}  // namespace pw
