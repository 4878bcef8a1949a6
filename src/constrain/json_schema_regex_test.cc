// JsonSchemaRegex: for schemas with nesting, enums, numbers, integer
// ranges, arrays, tuples and string patterns, every text the compiled
// automaton accepts — a thousand random walks each — parses as JSON and
// validates against the schema by an independent validator written here
// (constrain/json_schema_test_util.h, patterns through std::regex); texts that break the schema are refused;
// what cannot be honoured is refused naming the keyword and where.
#include "constrain/json_schema_regex.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>

#include "constrain/json_schema_test_util.h"
#include "constrain/regex_dfa.h"

namespace pw {
namespace {

using Json = nlohmann::ordered_json;

// A random text the automaton accepts: random live bytes, stopping at an
// accepting state with probability 1/4 (or when nothing may follow); "" if
// it ran past `cap` bytes.
std::string RandomMatch(const RegexDfa& dfa, std::mt19937& rng, size_t cap = 4000) {
  std::string text;
  int32_t s = dfa.start();
  while (text.size() < cap) {
    if (dfa.Accepting(s) && (!dfa.CanContinue(s) || rng() % 4 == 0)) return text;
    std::vector<uint8_t> next;
    for (int b = 0; b < 256; ++b) {
      if (dfa.Next(s, static_cast<uint8_t>(b)) != RegexDfa::kDead) next.push_back(static_cast<uint8_t>(b));
    }
    // Favour ASCII so texts close their strings and containers.
    uint8_t b = next[rng() % next.size()];
    for (int tries = 0; tries < 3 && b >= 0x80; ++tries) b = next[rng() % next.size()];
    text.push_back(static_cast<char>(b));
    s = dfa.Next(s, b);
  }
  return "";
}

const char* const kSchemas[] = {
    R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer","minimum":0,"maximum":130},"email":{"type":"string","pattern":"^[a-z]{1,8}@[a-z]{1,8}\\.(com|org)$"}},"required":["name","age"]})",
    R"({"type":"object","properties":{"kind":{"enum":["cat","dog",3,null,{"x":[1,2]}]},"tags":{"type":"array","items":{"type":"string","minLength":1,"maxLength":5},"minItems":1,"maxItems":3}},"required":["kind"]})",
    R"({"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":["number","null"]}},"required":["c"]}}},"ok":{"type":"boolean"}}})",
    R"({"type":"array","prefixItems":[{"const":"point"},{"type":"number"},{"type":"integer","minimum":-20,"maximum":7}]})",
    R"({"anyOf":[{"type":"string","pattern":"^id-[0-9]{3}$"},{"type":"integer","minimum":100,"maximum":1999}]})",
    R"({"type":"object","properties":{"p":{"type":"string","pattern":"x"},"q":{"type":"integer","maximum":-5},"r":{"type":"array","maxItems":0}},"required":["p","q","r"]})",
    R"({"type":"object","properties":{"u":{"type":"string","maxLength":4},"v":{"type":"string","maxLength":4},"w":{"type":"string","maxLength":4}}})",
    R"({"type":"object"})",
    R"({})",
};

TEST(JsonSchemaRegexTest, EveryAcceptedTextParsesAndValidates) {
  std::mt19937 rng(17);
  for (const char* text : kSchemas) {
    const Json schema = Json::parse(text);
    Result<std::string> regex = JsonSchemaRegex(schema);
    ASSERT_TRUE(regex.ok()) << text << ": " << regex.status().ToString();
    Result<RegexDfa> dfa = RegexDfa::Compile(*regex);
    ASSERT_TRUE(dfa.ok()) << text << ": " << dfa.status().ToString();
    int checked = 0;
    for (int i = 0; i < 1000; ++i) {
      const std::string out = RandomMatch(*dfa, rng);
      if (out.empty()) continue;
      ++checked;
      Json value;
      ASSERT_NO_THROW(value = Json::parse(out)) << text << "\ngenerated: " << out;
      ASSERT_TRUE(Validates(value, schema)) << text << "\ngenerated: " << out;
    }
    EXPECT_GT(checked, 900) << text;
  }
}

TEST(JsonSchemaRegexTest, TextsThatBreakTheSchemaAreRefused) {
  const Json schema = Json::parse(kSchemas[0]);
  const RegexDfa dfa = RegexDfa::Compile(*JsonSchemaRegex(schema)).value();
  EXPECT_TRUE(dfa.FullMatch(R"({"name":"Ann","age":30})"));
  EXPECT_TRUE(dfa.FullMatch(R"({"name":"Ann","age":130,"email":"a@b.org"})"));
  EXPECT_FALSE(dfa.FullMatch(R"({"name":"Ann"})"));                       // age required
  EXPECT_FALSE(dfa.FullMatch(R"({"name":"Ann","age":131})"));             // above maximum
  EXPECT_FALSE(dfa.FullMatch(R"({"name":"Ann","age":-1})"));              // below minimum
  EXPECT_FALSE(dfa.FullMatch(R"({"name":"Ann","age":030})"));             // a leading zero is not JSON
  EXPECT_FALSE(dfa.FullMatch(R"({"name":"Ann","age":3,"email":"a@b.net"})"));  // pattern
  EXPECT_FALSE(dfa.FullMatch(R"({"age":3,"name":"Ann"})"));               // properties in schema order
  EXPECT_FALSE(dfa.FullMatch(R"({"name":"Annabel Lee Poe","age":3})"));   // maxLength 12
  // Every integer of a range, and nothing next to it.
  const RegexDfa range = RegexDfa::Compile(*JsonSchemaRegex(Json::parse(
                                               R"({"type":"integer","minimum":-37,"maximum":1234})")))
                             .value();
  for (int i = -1500; i <= 1500; ++i) EXPECT_EQ(range.FullMatch(std::to_string(i)), i >= -37 && i <= 1234) << i;
  EXPECT_FALSE(range.FullMatch("-0"));
  // 16-digit bounds stay exact (a double would round 9007199254740993).
  const RegexDfa big = RegexDfa::Compile(*JsonSchemaRegex(Json::parse(
                                             R"({"type":"integer","minimum":9007199254740993})")))
                           .value();
  EXPECT_TRUE(big.FullMatch("9007199254740993"));
  EXPECT_FALSE(big.FullMatch("9007199254740992"));
}

TEST(JsonSchemaRegexTest, WhatCannotBeHonouredIsRefusedNamingKeywordAndPlace) {
  for (const auto& [schema, says] : std::vector<std::pair<const char*, const char*>>{
           {R"({"type":"object","properties":{"a":{"$ref":"#/$defs/x"}}})", "json_schema at /properties/a: \"$ref\" is not supported"},
           {R"({"oneOf":[{"type":"string"}]})", "\"oneOf\" is not supported"},
           {R"({"type":"string","format":"email"})", "\"format\" is not supported"},
           {R"({"type":"number","minimum":0})", "integers only"},
           {R"({"type":"integer","minimum":5,"maximum":2})", "above maximum"},
           {R"({"type":"string","pattern":"(a)\\1"})", "\"pattern\" regex at offset 5: unsupported escape"},
           {R"({"type":"object","properties":{"a":{}},"required":["b"]})", "not among the properties"},
           {R"({"type":"thing"})", "not a JSON Schema type"},
           {R"({"type":"array","items":{"type":"string"},"minItems":3,"maxItems":1})", "below minItems"},
           {R"(false)", "admits no value"},
           {R"({"type":"string","enum":["a",1]})", "\"enum\" next to \"type\" is not supported"},
           {R"({"anyOf":[{"type":"string"}],"properties":{"a":{}}})", "\"anyOf\" next to \"properties\""},
           {R"({"properties":{"age":{"minimum":0}}})", "/properties/age: \"minimum\" needs \"type\""},
           {R"({"type":"object","required":["a"]})", "needs \"properties\""},
       }) {
    Result<std::string> regex = JsonSchemaRegex(Json::parse(schema));
    ASSERT_FALSE(regex.ok()) << schema;
    EXPECT_EQ(regex.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(regex.status().message().find(says), std::string::npos) << schema << ": " << regex.status().ToString();
  }
}

}  // namespace
}  // namespace pw
