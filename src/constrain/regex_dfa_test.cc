// RegexDfa against std::regex (ECMAScript, an independent engine) on
// patterns of every construct and texts that match and do not; the
// prefix property the decoder relies on (a text walks without kDead iff
// some continuation matches); UTF-8: "." and negated classes take whole
// characters; refusals name the offset; the state cap.
#include "constrain/regex_dfa.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>
#include <vector>

namespace pw {
namespace {

RegexDfa Compiled(const std::string& pattern) {
  Result<RegexDfa> dfa = RegexDfa::Compile(pattern);
  EXPECT_TRUE(dfa.ok()) << pattern << ": " << dfa.status().ToString();
  return dfa.ok() ? std::move(dfa).value() : RegexDfa();
}

TEST(RegexDfaTest, AgreesWithStdRegexOnAsciiPatterns) {
  const std::vector<std::string> patterns = {
      "abc", "a|bc|", "(ab)*c", "a+b?c*", "[a-c]{2,3}x", "[^ab]+", "\\d{3}-\\d{4}", "(?:x|yz){2,}",
      "\"([^\"\\\\]|\\\\.)*\"", "-?(0|[1-9][0-9]{0,4})(\\.[0-9]{1,3})?", "\\w+@\\w+\\.(com|org)", "^a.c$",
      "[\\s,]*", "(true|false|null)", "a{0}b", "[-a]+", "[a\\-z]+", "\\x41\\u0042[\\t\\n]?",
  };
  // Every string of up to 5 characters over a small alphabet, and a few more.
  const std::string alphabet = "abcxyz019-.\"\\ @,";
  std::vector<std::string> texts = {"", "ABC", "ABC\t", "AB\n", "123-4567", "12-34", "-0.5", "01", "12345.678",
                                    "me@host.com", "me@host.net", "\"a\\\"b\"", "\"ab", "true", "nul", "b"};
  std::mt19937 rng(5);
  for (int i = 0; i < 4000; ++i) {
    std::string t;
    for (int n = static_cast<int>(rng() % 6); n > 0; --n) t += alphabet[rng() % alphabet.size()];
    texts.push_back(t);
  }
  for (const std::string& p : patterns) {
    const RegexDfa dfa = Compiled(p);
    const std::regex reference(p, std::regex::ECMAScript);
    for (const std::string& t : texts) {
      ASSERT_EQ(dfa.FullMatch(t), std::regex_match(t, reference)) << "pattern " << p << " text '" << t << "'";
    }
  }
}

TEST(RegexDfaTest, AWalkSurvivesExactlyTheTextsSomeContinuationMatches) {
  const RegexDfa dfa = Compiled("\\{\"a\":(true|[0-9]{1,3})\\}");
  const std::string match = "{\"a\":12}";
  for (size_t n = 0; n <= match.size(); ++n) {
    const int32_t s = dfa.Walk(dfa.start(), match.substr(0, n));
    ASSERT_NE(s, RegexDfa::kDead) << n;
    EXPECT_EQ(dfa.Accepting(s), n == match.size());
  }
  EXPECT_FALSE(dfa.CanContinue(dfa.Walk(dfa.start(), match)));  // the closing brace ends it
  EXPECT_TRUE(dfa.CanContinue(dfa.Walk(dfa.start(), "{\"a\":1")));
  EXPECT_EQ(dfa.Walk(dfa.start(), "{\"a\":1234"), RegexDfa::kDead);  // at most 3 digits
  EXPECT_EQ(dfa.Walk(dfa.start(), "{\"b\""), RegexDfa::kDead);
  EXPECT_EQ(dfa.Walk(dfa.start(), "{\"a\":tx"), RegexDfa::kDead);
}

TEST(RegexDfaTest, DotAndNegatedClassesTakeWholeUtf8Characters) {
  const RegexDfa dot = Compiled("a.b");
  EXPECT_TRUE(dot.FullMatch("a\xC3\xA9" "b"));           // é, two bytes
  EXPECT_TRUE(dot.FullMatch("a\xF0\x9F\x98\x80" "b"));   // 😀, four bytes
  EXPECT_FALSE(dot.FullMatch("a\xC3" "b"));              // half a character
  EXPECT_FALSE(dot.FullMatch("a\nb"));
  EXPECT_FALSE(dot.FullMatch("a\xED\xA0\x80" "b"));       // an encoded surrogate is not UTF-8
  const RegexDfa negated = Compiled("[^x]{2}");
  EXPECT_TRUE(negated.FullMatch("\xE2\x82\xAC\xC3\xA9"));  // € é
  EXPECT_FALSE(negated.FullMatch("\xE2\x82\xAC"));          // one character, three bytes
  EXPECT_EQ(negated.Walk(negated.start(), "\xC0"), RegexDfa::kDead);  // never a UTF-8 lead byte
  const RegexDfa spaces = Compiled("a\\sb");  // ECMAScript's \s: Unicode spaces too
  EXPECT_TRUE(spaces.FullMatch("a\xC2\xA0" "b"));     // U+00A0
  EXPECT_TRUE(spaces.FullMatch("a\xE3\x80\x80" "b"));  // U+3000
  EXPECT_FALSE(Compiled("a.b").FullMatch("a\xE2\x80\xA8" "b"));  // U+2028 ends a line
  EXPECT_FALSE(Compiled("a[]b").FullMatch("ab"));                  // [] matches nothing
  EXPECT_TRUE(Compiled("a[^]b").FullMatch("a\nb"));                // [^] anything
  const RegexDfa range = Compiled("[à-ÿ]+|\\u00e9");
  EXPECT_TRUE(range.FullMatch("àéÿ"));
  EXPECT_FALSE(range.FullMatch("a"));
}

TEST(RegexDfaTest, UnsupportedSyntaxIsRefusedNamingTheOffset) {
  for (const auto& [pattern, says] : std::vector<std::pair<std::string, std::string>>{
           {"(a)\\1", "offset 5: unsupported escape \\1"},
           {"a(?=b)", "offset 2: lookaround"},
           {"(ab", "missing ')'"},
           {"ab)", "unmatched ')'"},
           {"[ab", "missing ']'"},
           {"a{3,1}", "m < n"},
           {"\\bword", "word boundaries"},
           {"a^b", "'^' is supported only at the start"},
           {"[z-a]", "out of order"},
           {"*a", "nothing to repeat"},
           {"ab\xff", "offset 2: the pattern is not valid UTF-8"},
       }) {
    Result<RegexDfa> dfa = RegexDfa::Compile(pattern);
    ASSERT_FALSE(dfa.ok()) << pattern;
    EXPECT_EQ(dfa.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(dfa.status().message().find(says), std::string::npos) << pattern << ": " << dfa.status().ToString();
  }
}

TEST(RegexDfaTest, LongBoundedRepeatsCompileInLinearSpace) {
  // x{0,k} nests its optional copies: 30,000 of them compile at once.
  const RegexDfa dfa = Compiled("[a-z]{0,30000}");
  EXPECT_TRUE(dfa.FullMatch(std::string(30000, 'q')));
  EXPECT_FALSE(dfa.FullMatch(std::string(30001, 'q')));
  // Repeating an empty group is work too, and is bounded.
  Result<RegexDfa> empty = RegexDfa::Compile("((?:){100000}){100000}");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kFailedPrecondition);
  Result<RegexDfa> deep = RegexDfa::Compile(std::string(300, '(') + "a" + std::string(300, ')'));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nested deeper than 256"), std::string::npos);
}

TEST(RegexDfaTest, AnAutomatonPastTheStateCapIsRefused) {
  Result<RegexDfa> big = RegexDfa::Compile("(a|b)*a(a|b){14}", 1000);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(RegexDfa::Compile("(a|b)*a(a|b){14}", 100000).ok());
  // Nothing matches: no live state at all.
  const RegexDfa none = Compiled("[^\\s\\S]");
  EXPECT_EQ(none.start(), RegexDfa::kDead);
  EXPECT_FALSE(none.FullMatch(""));
}

}  // namespace
}  // namespace pw
