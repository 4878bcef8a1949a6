// Byte-level BPE on small hand-made tables, where every expected id can be
// worked out by hand: splitting, merge order, ignore_merges, added tokens,
// NFC, the post-processor's BOS, and the errors a malformed tokenizer.json
// must give.
#include "text/byte_level_bpe.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "text/hf_tokenizer_json.h"
#include "text/utf8.h"

namespace pw {
namespace {

using Json = nlohmann::json;
using Ids = std::vector<int32_t>;

std::string StandIn(char c) {
  std::string s;
  AppendUtf8(ByteStandIn(static_cast<uint8_t>(c)), s);
  return s;
}

// Byte b has id b; merged tokens follow from 256 in merge order.
Json TinyTokenizerJson() {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b) vocab[StandIn(static_cast<char>(b))] = b;
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {StandIn(' '), "hello"}};
  Json merge_list = Json::array();
  int32_t next = 256;
  for (const auto& [a, b] : merges) {
    vocab[a + b] = next++;
    merge_list.push_back(a + " " + b);
  }
  vocab[StandIn(' ') + "world"] = next++;  // 261: reachable only whole (ignore_merges)
  Json j;
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", merge_list}};
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  j["added_tokens"] = Json::array({{{"id", 300}, {"content", "<|eot|>"}, {"special", true}},
                                   {{"id", 301}, {"content", "<tool>"}, {"special", false}, {"lstrip", true}}});
  j["normalizer"] = nullptr;
  return j;
}

std::unique_ptr<ByteLevelBpe> Build(const Json& j) {
  auto file = ParseTokenizerJson(j.dump(), "tokenizer.json");
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  auto bpe = ByteLevelBpe::Create(std::move(file.value().tables), std::move(file.value().options), "tokenizer.json");
  EXPECT_TRUE(bpe.ok()) << bpe.status().ToString();
  return std::move(bpe.value());
}

Ids Encode(const Tokenizer& t, std::string_view text) {
  auto ids = t.Encode(text);
  EXPECT_TRUE(ids.ok()) << ids.status().ToString();
  return ids.ok() ? ids.value() : Ids{};
}

TEST(ByteLevelBpe, MergesInRankOrderWithinRegexPieces) {
  auto bpe = Build(TinyTokenizerJson());
  // "hello" merges he, ll, hell, hello; " hello" then joins the space.
  EXPECT_EQ(Encode(*bpe, "hello hello"), (Ids{259, 260}));
  // "hel" stops at "he"+"l": no rule joins them.
  EXPECT_EQ(Encode(*bpe, "hel"), (Ids{256, 'l'}));
  // The regex keeps "hello" and "world" apart even though bytes could merge across.
  EXPECT_EQ(Encode(*bpe, "hello!"), (Ids{259, '!'}));
  EXPECT_EQ(Encode(*bpe, ""), Ids{});
}

TEST(ByteLevelBpe, IgnoreMergesTakesAWholePieceThatIsAToken) {
  Json j = TinyTokenizerJson();
  EXPECT_EQ(Encode(*Build(j), " world"), (Ids{' ', 'w', 'o', 'r', 'l', 'd'}));
  j["model"]["ignore_merges"] = true;
  EXPECT_EQ(Encode(*Build(j), " world"), (Ids{261}));
}

TEST(ByteLevelBpe, AddedTokensMatchLiterallyAndDecodeSkipsSpecials) {
  auto bpe = Build(TinyTokenizerJson());
  EXPECT_EQ(Encode(*bpe, "hello<|eot|>hello"), (Ids{259, 300, 259}));
  // lstrip: the token swallows the spaces before it.
  EXPECT_EQ(Encode(*bpe, "hello  <tool>"), (Ids{259, 301}));
  EXPECT_EQ(bpe->Decode(Ids{259, 300, 259}).value(), "hello<|eot|>hello");
  EXPECT_EQ(bpe->Decode(Ids{259, 300, 259}, /*skip_special=*/true).value(), "hellohello");
  EXPECT_EQ(bpe->Decode(Ids{301}, /*skip_special=*/true).value(), "<tool>");
  EXPECT_EQ(bpe->TokenId("<|eot|>"), 300);
  EXPECT_EQ(bpe->TokenId("hello"), 259);
  EXPECT_FALSE(bpe->TokenId("absent").has_value());
}

TEST(ByteLevelBpe, SplitRegexThenByteLevelWithoutItsOwnRegex) {
  Json j = TinyTokenizerJson();
  // Llama 3's layout: a Split step, then ByteLevel with use_regex false.
  // This pattern isolates single digits, so "12" stays two pieces.
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         Json::array({{{"type", "Split"}, {"pattern", {{"Regex", "\\p{N}| ?\\p{L}+|\\s+"}}}, {"behavior", "Isolated"}},
                                      {{"type", "ByteLevel"}, {"use_regex", false}}})}};
  auto bpe = Build(j);
  EXPECT_EQ(Encode(*bpe, "12 hello"), (Ids{'1', '2', 260}));
}

TEST(ByteLevelBpe, NfcNormalizerComposesBeforeSplitting) {
  Json j = TinyTokenizerJson();
  const std::string decomposed = "e\xCC\x81";  // e + combining acute accent
  EXPECT_EQ(Encode(*Build(j), decomposed), (Ids{'e', 0xCC, 0x81}));
  j["normalizer"] = {{"type", "NFC"}};
  EXPECT_EQ(Encode(*Build(j), decomposed), (Ids{0xC3, 0xA9}));  // é
}

// (An lstrip/rstrip token swallows whitespace by design, so texts here have none around <tool>.)
TEST(ByteLevelBpe, EveryValidUtf8TextRoundTrips) {
  auto bpe = Build(TinyTokenizerJson());
  for (std::string text : {"hello world", "  \t\n\r\n  ", "naïve 日本語 🚀👩‍👩‍👧", "a<|eot|>b<tool> c",
                           "\x7F\xC2\x80 control bytes \x01\x02"}) {
    EXPECT_EQ(bpe->Decode(Encode(*bpe, text)).value(), text);
  }
}

TEST(ByteLevelBpe, PostProcessorTemplateGivesBos) {
  Json j = TinyTokenizerJson();
  j["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", Json::array({{{"SpecialToken", {{"id", "<|eot|>"}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
      {"special_tokens", {{"<|eot|>", {{"id", "<|eot|>"}, {"ids", {300}}, {"tokens", {"<|eot|>"}}}}}}};
  auto file = ParseTokenizerJson(j.dump(), "tokenizer.json");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file.value().template_bos, 300);
}

TEST(ByteLevelBpe, RejectsInputItCannotEncodeOrDecode) {
  auto bpe = Build(TinyTokenizerJson());
  auto bad = bpe->Encode("ok \xFF\xFE");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not valid UTF-8 at byte 3"), std::string::npos) << bad.status().ToString();
  // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8 either.
  for (std::string bad_text : {"a\xC0\xAF", "a\xE0\x80\xAF", "a\xED\xA0\x80", "a\xF4\x90\x80\x80", "a\xE2\x82"}) {
    auto refused = bpe->Encode(bad_text);
    ASSERT_FALSE(refused.ok()) << bad_text;
    EXPECT_NE(refused.status().message().find("not valid UTF-8 at byte 1"), std::string::npos) << refused.status().ToString();
  }
  auto out_of_range = bpe->Decode(Ids{1, 5000});
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.status().message().find("token 1 has id 5000"), std::string::npos);
}

// Each malformed tokenizer.json names the file and the field at fault.
void ExpectRejected(const Json& j, const std::string& needle) {
  auto file = ParseTokenizerJson(j.dump(), "models/x/tokenizer.json");
  Status status = file.status();
  if (file.ok()) {
    auto bpe = ByteLevelBpe::Create(std::move(file.value().tables), std::move(file.value().options), "models/x/tokenizer.json");
    ASSERT_FALSE(bpe.ok()) << "expected an error mentioning " << needle;
    status = bpe.status();
  }
  EXPECT_NE(status.message().find("models/x/tokenizer.json"), std::string::npos) << status.ToString();
  EXPECT_NE(status.message().find(needle), std::string::npos) << status.ToString();
}

TEST(ByteLevelBpe, MalformedTokenizerJsonIsRefusedWithFileAndField) {
  Json j = TinyTokenizerJson();
  j["model"]["type"] = "Unigram";
  ExpectRejected(j, "model.type 'Unigram'");

  j = TinyTokenizerJson();
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "▁"}};
  ExpectRejected(j, "SentencePiece-style");

  j = TinyTokenizerJson();
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers", Json::array({{{"type", "Split"}, {"pattern", {{"Regex", "\\s"}}}, {"behavior", "Removed"}},
                                                       {{"type", "ByteLevel"}}})}};
  ExpectRejected(j, "pre_tokenizer.pretokenizers[0].behavior");

  j = TinyTokenizerJson();
  j["model"]["merges"].push_back("x zz");
  ExpectRejected(j, "merge 6 ('x' 'zz')");

  j = TinyTokenizerJson();
  j["model"]["vocab"].erase(StandIn('A'));
  ExpectRejected(j, "byte 0x41");

  j = TinyTokenizerJson();
  j["normalizer"] = {{"type", "Lowercase"}};
  ExpectRejected(j, "normalizer.type 'Lowercase'");

  j = TinyTokenizerJson();
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers", Json::array({{{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}},
                                                       {{"type", "ByteLevel"}}})}};
  auto file = ParseTokenizerJson(j.dump(), "t.json");
  ASSERT_TRUE(file.ok());
  auto bpe = ByteLevelBpe::Create(std::move(file.value().tables), std::move(file.value().options), "t.json");
  ASSERT_FALSE(bpe.ok());
  EXPECT_NE(bpe.status().message().find("does not compile"), std::string::npos) << bpe.status().ToString();
}

}  // namespace
}  // namespace pw
