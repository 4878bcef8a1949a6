// Structured output in the engine: on a random-init byte-level model (whose
// unconstrained text is noise), every constrained request — greedy and
// sampled, JSON Schemas with nesting, enums, integer ranges, arrays and
// string patterns, and a regex — ends ("end") with text that parses and
// validates (constrain/json_schema_test_util.h, an independent validator);
// stop tokens only once the text is a whole match; unconstrained requests
// beside them generate what they generate alone.
#include <gtest/gtest.h>

#include <map>

#include "infer/engine.h"
#include "infer/infer_test_util.h"
#include "infer/local_pool.h"
#include "text/byte_tokenizer.h"
#include "constrain/json_schema_test_util.h"

namespace pw {
namespace {

const char* const kSchemas[] = {
    R"({"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer","minimum":0,"maximum":120},"email":{"type":"string","pattern":"^[a-z]{1,6}@[a-z]{1,6}\\.(com|org)$"}},"required":["name","age"]})",
    R"({"type":"object","properties":{"kind":{"enum":["cat","dog",3,null]},"tags":{"type":"array","items":{"type":"string","minLength":1,"maxLength":4},"minItems":1,"maxItems":3}},"required":["kind","tags"]})",
    R"({"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":["integer","null","boolean"]}},"required":["b"]},"ok":{"type":"boolean"}},"required":["a"]})",
    R"({"type":"array","prefixItems":[{"const":"point"},{"type":"integer","minimum":-20,"maximum":7},{"type":"number"}]})",
};

class StructuredOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<ModelWeights> w = LoadModelWeights(WeightSource{"", SmallTestConfig(64, 2, 256), 5}, {}, true);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    weights_ = std::move(w).value();
    vocab_ = ConstraintVocabulary::Build(bytes_, 256).value();
  }

  std::shared_ptr<const TokenConstraint> Constraint(const std::string& schema, const std::string& regex) {
    return TokenConstraint::Create(TokenConstraint::PatternOf(schema, regex).value(), vocab_).value();
  }

  std::map<std::string, GenerationResult> Run(const std::vector<GenerationRequest>& requests, EngineOptions options) {
    std::unique_ptr<WeightPool> pool = MakeLocalPool(weights_);
    PagedKvCache cache(weights_.config, 400, 8);
    InferenceEngine engine(weights_, *pool, cache, options);
    std::map<std::string, GenerationResult> out;
    Status s = engine.Run(requests, [&](const GenerationResult& r) { out[r.id + "/" + std::to_string(r.sample)] = r; });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  ByteTokenizer bytes_;
  std::shared_ptr<const ConstraintVocabulary> vocab_;
  ModelWeights weights_;
};

GenerationRequest Prompt(const std::string& id, int index, const std::string& text, int max_new = 200) {
  GenerationRequest r;
  r.id = id;
  r.index = index;
  for (unsigned char c : text) r.prompt.push_back(c);
  r.max_new_tokens = max_new;
  return r;
}

std::string Text(const GenerationResult& r) {
  std::string t;
  for (int64_t b : r.tokens) t.push_back(static_cast<char>(b));
  return t;
}

TEST_F(StructuredOutputTest, EveryConstrainedOutputParsesAndValidatesGreedyAndSampled) {
  for (const bool sampled : {false, true}) {
    SCOPED_TRACE(sampled ? "sampled" : "greedy");
    std::vector<GenerationRequest> requests;
    int index = 0;
    for (const char* schema : kSchemas) {
      for (int k = 0; k < 4; ++k) {
        GenerationRequest r = Prompt("s" + std::to_string(index), index, "Answer in JSON " + std::to_string(k) + ":");
        r.sample = k;
        r.samples = 4;
        r.constraint = Constraint(schema, "");
        requests.push_back(r);
      }
      ++index;
    }
    EngineOptions options;
    if (sampled) options.sampling = {1.0, 0, 1.0, 21};
    const auto results = Run(requests, options);
    ASSERT_EQ(results.size(), requests.size());
    for (const GenerationRequest& r : requests) {
      const GenerationResult& got = results.at(r.id + "/" + std::to_string(r.sample));
      const std::string text = Text(got);
      const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(kSchemas[r.index]);
      EXPECT_EQ(got.finish_reason, FinishReason::kEnd) << text;
      nlohmann::ordered_json value;
      ASSERT_NO_THROW(value = nlohmann::ordered_json::parse(text)) << text;
      EXPECT_TRUE(Validates(value, schema)) << kSchemas[r.index] << "\n" << text;
    }
  }
}

TEST_F(StructuredOutputTest, ARegexAStopTokenAndUnconstrainedNeighbours) {
  GenerationRequest yes_no = Prompt("yn", 0, "Is it? ");
  yes_no.constraint = Constraint("", "(yes|no)( indeed)?");
  yes_no.stop_tokens = {'\n'};  // allowed only once "yes"/"no" is whole
  GenerationRequest free_a = Prompt("free-a", 1, "Once upon", 12), free_b = Prompt("free-b", 2, "a time", 12);
  EngineOptions options;
  options.sampling = {0.9, 0, 1.0, 4};
  const auto together = Run({free_a, yes_no, free_b}, options);
  const std::string text = Text(together.at("yn/0"));
  EXPECT_TRUE(text == "yes" || text == "no" || text == "yes\n" || text == "no\n" || text == "yes indeed" ||
              text == "no indeed")
      << text;
  EXPECT_EQ(together.at("yn/0").finish_reason, FinishReason::kEnd);
  // The unconstrained ones are what they are alone.
  const auto alone = Run({free_a, free_b}, options);
  EXPECT_EQ(together.at("free-a/0").tokens, alone.at("free-a/0").tokens);
  EXPECT_EQ(together.at("free-b/0").tokens, alone.at("free-b/0").tokens);
}

TEST_F(StructuredOutputTest, AStopByteThePatternAllowsEndsNothingHalfMade) {
  // --end-byte 10 with a pattern that allows newlines inside: the stop byte
  // is taken out until the text is a whole match, so it never cuts one.
  for (uint64_t seed = 0; seed < 6; ++seed) {
    GenerationRequest r = Prompt("nl", 0, "List:", 60);
    r.constraint = Constraint("", "[a-z\\n]{1,8};");
    r.stop_tokens = {'\n'};
    EngineOptions options;
    options.sampling = {1.5, 0, 1.0, seed};
    const GenerationResult got = Run({r}, options).at("nl/0");
    const std::string text = Text(got);
    EXPECT_EQ(got.finish_reason, FinishReason::kEnd) << text;
    EXPECT_TRUE(RegexDfa::Compile("[a-z]{1,8};").value().FullMatch(text)) << text;
  }
}

TEST_F(StructuredOutputTest, AConstraintTheVocabularyCannotFollowFailsAlone) {
  // Token 0x80 alone is not UTF-8, and the byte model has nothing else
  // once the pattern needs a character the vocabulary lacks: a vocabulary
  // of 128 tokens (ASCII) against a pattern that wants "é".
  auto ascii = ConstraintVocabulary::Build(bytes_, 128).value();
  GenerationRequest r = Prompt("e", 0, "x");
  r.constraint = TokenConstraint::Create("caf\u00e9", ascii).value();
  GenerationRequest other = Prompt("other", 1, "y", 5);
  const auto results = Run({r, other}, EngineOptions{});
  EXPECT_EQ(results.at("e/0").finish_reason, FinishReason::kError);
  EXPECT_NE(results.at("e/0").error.find("no token of the vocabulary continues the text after 3"), std::string::npos)
      << results.at("e/0").error;
  EXPECT_EQ(results.at("other/0").finish_reason, FinishReason::kLength);
}

}  // namespace
}  // namespace pw
