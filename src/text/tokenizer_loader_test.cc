// LoadTokenizer: which file of a model directory wins, BOS/EOS from the
// configs in precedence order, SentencePiece through its own library, and
// errors that name the file and field.
#include "text/tokenizer_loader.h"

#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "text/byte_level_bpe.h"
#include "text/text_test_util.h"
#include "text/utf8.h"

namespace pw {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Ids = std::vector<int32_t>;

class TokenizerLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshTestDirectory("pw_tokenizer_"); }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }

  // A byte-level tokenizer.json: byte b has id b, plus two specials.
  void WriteTinyBpe() {
    Json vocab = Json::object();
    for (int b = 0; b < 256; ++b) {
      std::string s;
      AppendUtf8(ByteStandIn(static_cast<uint8_t>(b)), s);
      vocab[s] = b;
    }
    Json j;
    j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array()}};
    j["pre_tokenizer"] = {{"type", "ByteLevel"}};
    j["added_tokens"] = Json::array({{{"id", 256}, {"content", "<|bos|>"}, {"special", true}},
                                     {{"id", 257}, {"content", "<|eos|>"}, {"special", true}},
                                     {{"id", 258}, {"content", "<|eot|>"}, {"special", true}}});
    Write("tokenizer.json", j.dump());
  }

  // Trains a small SentencePiece model with the library itself.
  void TrainSentencePiece() {
    std::ofstream corpus(dir_ / "corpus.txt");
    for (int i = 0; i < 200; ++i) {
      corpus << "the quick brown fox jumps over the lazy dog " << i << "\n"
             << "pipelines keep every stage busy, bubbles are idle time\n";
    }
    corpus.close();
    const auto status = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + (dir_ / "corpus.txt").string() + " --model_prefix=" + (dir_ / "tokenizer").string() +
        " --vocab_size=400 --model_type=bpe --byte_fallback=true --minloglevel=2");
    ASSERT_TRUE(status.ok()) << status.ToString();
  }

  fs::path dir_;
};

TEST_F(TokenizerLoaderTest, ConfigsGiveBosEosInPrecedenceOrder) {
  WriteTinyBpe();
  Write("tokenizer_config.json", R"({"bos_token": "<|bos|>", "eos_token": {"content": "<|eos|>"}})");
  auto t = LoadTokenizer(dir_.string());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t.value()->kind(), "bpe");
  EXPECT_EQ(t.value()->special().bos, 256);
  EXPECT_EQ(t.value()->special().eos, 257);
  EXPECT_FALSE(t.value()->special().add_bos);

  // generation_config.json outranks the rest and may list several stop ids.
  Write("config.json", R"({"bos_token_id": 256, "eos_token_id": 256})");
  Write("generation_config.json", R"({"eos_token_id": [258, 257]})");
  Write("tokenizer_config.json", R"({"bos_token": "<|bos|>", "add_bos_token": true})");
  t = LoadTokenizer(dir_.string());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t.value()->special().eos, 258);
  EXPECT_EQ(t.value()->special().stop_ids, (Ids{258, 257}));
  EXPECT_TRUE(t.value()->special().add_bos);
}

TEST_F(TokenizerLoaderTest, SpecialIdsOutsideTheVocabularyAreRefusedNamingFileAndField) {
  WriteTinyBpe();
  Write("generation_config.json", R"({"eos_token_id": 128001})");
  auto t = LoadTokenizer(dir_.string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("generation_config.json: eos_token_id 128001 is outside"), std::string::npos)
      << t.status().ToString();
  Write("generation_config.json", R"({})");
  Write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  t = LoadTokenizer(dir_.string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("tokenizer_config.json: eos_token names '</s>'"), std::string::npos)
      << t.status().ToString();
}

// A model served from ids only: its size, EOS ids from config.json and
// generation_config.json (the latter wins), text refused with what to give,
// ids decoded to no text and checked against the vocabulary.
TEST_F(TokenizerLoaderTest, IdsOnlyStandInKnowsTheVocabularyAndTheConfigsEos) {
  Write("config.json", R"({"bos_token_id": 1, "eos_token_id": 2})");
  Write("generation_config.json", R"({"eos_token_id": [5, 2]})");
  auto t = MakeIdsOnlyTokenizer(512, dir_.string());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t.value()->kind(), "ids");
  EXPECT_EQ(t.value()->vocab_size(), 512);
  EXPECT_EQ(t.value()->special().bos, 1);
  EXPECT_EQ(t.value()->special().eos, 5);
  EXPECT_EQ(t.value()->special().stop_ids, (Ids{5, 2}));
  EXPECT_FALSE(t.value()->special().add_bos) << "prompt ids are used as given";
  auto encoded = t.value()->Encode("hello");
  ASSERT_FALSE(encoded.ok());
  EXPECT_NE(encoded.status().message().find("prompt_ids"), std::string::npos) << encoded.status().ToString();
  const Ids ids = {0, 511, 7};
  EXPECT_EQ(t.value()->Decode(ids).value(), "");
  const Ids bad = {3, 512};
  EXPECT_FALSE(t.value()->Decode(bad).ok());
  Write("generation_config.json", R"({"eos_token_id": 600})");
  t = MakeIdsOnlyTokenizer(512, dir_.string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("eos_token_id 600 is outside"), std::string::npos) << t.status().ToString();
}

TEST_F(TokenizerLoaderTest, MissingOrUnknownTokenizerSaysWhatWasLookedFor) {
  auto t = LoadTokenizer(dir_.string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("tokenizer.json, tokenizer.model"), std::string::npos) << t.status().ToString();
  Write("vocab.txt", "a\nb\n");
  t = LoadTokenizer((dir_ / "vocab.txt").string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("unknown tokenizer type"), std::string::npos) << t.status().ToString();
  Write("tokenizer.json", "{not json");
  t = LoadTokenizer(dir_.string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("tokenizer.json: not a JSON object"), std::string::npos) << t.status().ToString();
}

TEST_F(TokenizerLoaderTest, SentencePieceModelRoundTripsWithItsOwnBosEos) {
  TrainSentencePiece();
  auto t = LoadTokenizer(dir_.string());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const Tokenizer& sp = *t.value();
  EXPECT_EQ(sp.kind(), "sentencepiece");
  EXPECT_EQ(sp.vocab_size(), 400);
  // SentencePiece's defaults: <unk> 0, <s> 1, </s> 2; Llama-style prompts start with <s>.
  EXPECT_EQ(sp.special().bos, 1);
  EXPECT_EQ(sp.special().eos, 2);
  EXPECT_TRUE(sp.special().add_bos);
  // Byte fallback carries characters the training text never had.
  for (std::string text : {"the quick brown fox", "bubbles are idle time", "日本語 🚀 naïve"}) {
    auto ids = sp.Encode(text);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    EXPECT_FALSE(ids.value().empty());
    EXPECT_EQ(sp.Decode(ids.value()).value(), text);
  }
  Ids with_specials = {1};
  auto body = sp.Encode("the lazy dog").value();
  with_specials.insert(with_specials.end(), body.begin(), body.end());
  with_specials.push_back(2);
  EXPECT_EQ(sp.Decode(with_specials, /*skip_special=*/true).value(), "the lazy dog");
  EXPECT_FALSE(sp.Decode(Ids{400}).ok());

  // tokenizer_config.json can turn BOS off, as some fine-tunes do.
  Write("tokenizer_config.json", R"({"add_bos_token": false})");
  EXPECT_FALSE(LoadTokenizer(dir_.string()).value()->special().add_bos);
}

TEST_F(TokenizerLoaderTest, ATokenizerJsonItCannotRunGivesWayToTokenizerModel) {
  TrainSentencePiece();
  // A charsmap normalizer (T5, ALBERT) is not run from tokenizer.json.
  Write("tokenizer.json", R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0]]},
                              "normalizer": {"type": "Precompiled", "precompiled_charsmap": "AAAA"},
                              "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581"}})");
  auto t = LoadTokenizer(dir_.string());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t.value()->vocab_size(), 400) << "tokenizer.model's vocabulary";
  // Alone, it is refused with what to do.
  std::filesystem::remove(dir_ / "tokenizer.model");
  t = LoadTokenizer(dir_.string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("normalizer.type 'Precompiled'"), std::string::npos) << t.status().ToString();
  EXPECT_NE(t.status().message().find("tokenizer.model"), std::string::npos) << t.status().ToString();
}

TEST_F(TokenizerLoaderTest, CorruptSentencePieceModelIsRefusedNamingTheFile) {
  Write("tokenizer.model", "this is not a protobuf");
  auto t = LoadTokenizer(dir_.string());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("tokenizer.model: not a SentencePiece model"), std::string::npos)
      << t.status().ToString();
}

TEST_F(TokenizerLoaderTest, ByteTokenizerIsTheIdentityOnBytes) {
  auto bytes = MakeByteTokenizer();
  const std::string text = "any bytes \xFF\x00 at all";
  auto ids = bytes->Encode(text).value();
  EXPECT_EQ(ids.size(), text.size());
  EXPECT_EQ(ids[10], 255);
  EXPECT_EQ(bytes->Decode(ids).value(), text);
  EXPECT_FALSE(bytes->Decode(Ids{256}).ok());
}

}  // namespace
}  // namespace pw
