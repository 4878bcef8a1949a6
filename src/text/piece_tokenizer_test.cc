// SentencePiece-style tokenizer.json: a Unigram model built from a
// SentencePiece model trained here encodes and decodes as libsentencepiece
// itself does (an independent implementation of the same model), and small
// hand-made BPE tables pin down what each part does — Prepend/Replace, byte
// fallback, unknown characters, Metaspace's prepend schemes, each decoder —
// with every id worked out by hand from Hugging Face's rules. Malformed or
// unsupported files are refused naming the file and the field.
#include "text/piece_tokenizer.h"

#include <gtest/gtest.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "text/hf_tokenizer_json.h"
#include "text/text_test_util.h"

namespace pw {
namespace {

using Json = nlohmann::json;
using Ids = std::vector<int32_t>;

std::unique_ptr<PieceTokenizer> Build(const Json& j) {
  auto file = ReadTokenizerJson(j.dump(), "tokenizer.json");
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  auto* pieces = std::get_if<PieceFile>(&file.value());
  EXPECT_NE(pieces, nullptr) << "read as byte-level";
  if (pieces == nullptr) return nullptr;
  auto t = PieceTokenizer::Create(std::move(pieces->tables), std::move(pieces->options), "tokenizer.json");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t.value()) : nullptr;
}

// [[piece, score], …] (a braced list of pairs would make a JSON object).
Json UnigramVocab(const std::vector<std::pair<std::string, double>>& entries) {
  Json vocab = Json::array();
  for (const auto& [piece, score] : entries) vocab.push_back(Json::array({piece, score}));
  return vocab;
}

Ids Encode(const Tokenizer& t, std::string_view text) {
  auto ids = t.Encode(text);
  EXPECT_TRUE(ids.ok()) << ids.status().ToString();
  return ids.ok() ? ids.value() : Ids{};
}

std::string Decode(const Tokenizer& t, const Ids& ids, bool skip_special = false) {
  auto text = t.Decode(ids, skip_special);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? text.value() : "";
}

// Llama-2-shaped BPE: "▁" 3, "a" 4, "b" 5, "▁a" 6, "ab" 7, "▁ab" 8, bytes
// <0xC3> 9 and <0xA9> 10 (é), <0xE2> 11; merges ▁ a, a b, ▁a b in that order.
Json LlamaShapedJson() {
  Json j;
  j["model"] = {{"type", "BPE"},
                {"vocab", {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}, {"▁", 3}, {"a", 4}, {"b", 5}, {"▁a", 6}, {"ab", 7},
                           {"▁ab", 8}, {"<0xC3>", 9}, {"<0xA9>", 10}, {"<0xE2>", 11}}},
                {"merges", {"▁ a", "a b", "▁a b"}},
                {"unk_token", "<unk>"},
                {"fuse_unk", true},
                {"byte_fallback", true},
                {"dropout", nullptr}};
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers", {{{"type", "Prepend"}, {"prepend", "▁"}},
                                      {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}};
  j["pre_tokenizer"] = nullptr;
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
                                {{"type", "ByteFallback"}},
                                {{"type", "Fuse"}},
                                {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  j["added_tokens"] = {{{"id", 0}, {"content", "<unk>"}, {"special", true}},
                       {{"id", 1}, {"content", "<s>"}, {"special", true}},
                       {{"id", 2}, {"content", "</s>"}, {"special", true}}};
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                     {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
                         {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  return j;
}

TEST(PieceTokenizer, LlamaShapedBpeMergesInRankOrderAndFallsBackToBytes) {
  auto t = Build(LlamaShapedJson());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->kind(), "sentencepiece");
  // "▁ab": ▁+a (rank 0) first, then ▁a+b (rank 2); "a b" (rank 1) never
  // gets its chance at the a.
  EXPECT_EQ(Encode(*t, "ab"), (Ids{8}));
  // Prepend + Replace: " ab" → "▁▁ab" → ▁ ▁ab.
  EXPECT_EQ(Encode(*t, " ab"), (Ids{3, 8}));
  // é is no piece: its UTF-8 bytes. ✓ (E2 9C 93) lacks two byte tokens:
  // unk, and a run of such characters fuses into one unk.
  EXPECT_EQ(Encode(*t, "aé"), (Ids{6, 9, 10}));
  EXPECT_EQ(Encode(*t, "a✓✓b"), (Ids{6, 0, 5}));
  // Special tokens in the text; each stretch between them gets its own "▁".
  EXPECT_EQ(Encode(*t, "a<s>b"), (Ids{6, 1, 3, 5}));
  EXPECT_EQ(Encode(*t, ""), Ids{});
  // Decode: ▁ → space, bytes back to UTF-8, one leading space stripped.
  EXPECT_EQ(Decode(*t, Ids{6, 9, 10}), "aé");
  EXPECT_EQ(Decode(*t, Ids{3, 8}), " ab");
  EXPECT_EQ(Decode(*t, Ids{1, 6, 2}), "<s> a</s>");
  EXPECT_EQ(Decode(*t, Ids{1, 6, 2}, /*skip_special=*/true), "a");
  // A byte run that is not UTF-8 becomes one U+FFFD per byte.
  EXPECT_EQ(Decode(*t, Ids{6, 11, 9}), "a\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_FALSE(t->Decode(Ids{12}).ok());
  EXPECT_EQ(t->TokenId("▁ab"), 8);
  EXPECT_EQ(t->TokenId("<s>"), 1);
}

TEST(PieceTokenizer, MergesFollowHuggingFaceOnTablesNoTrainerWrote) {
  // "ab a" outranks "a b", whose result it needs: a trainer never writes
  // that, but a hand-edited file may. Hugging Face merges one pair at a
  // time by rank, so "abab" → ab a b → aba b. Merging every occurrence of
  // the best pair per pass gives ab ab instead.
  Json j;
  j["model"] = {{"type", "BPE"},
                {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}, {"aba", 3}}},
                {"merges", {"ab a", "a b"}}};
  auto t = Build(j);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(Encode(*t, "abab"), (Ids{3, 1}));
  EXPECT_EQ(Encode(*t, "ab"), (Ids{2}));
}

TEST(PieceTokenizer, LongTextsCutBetweenWordsEncodeAsAWhole) {
  // Cutting before each "▁" (no piece joins a character to a following
  // "▁") must not change the ids: a long text equals its words' ids.
  auto t = Build(LlamaShapedJson());
  ASSERT_NE(t, nullptr);
  std::string text;
  Ids expected;
  for (int i = 0; i < 500; ++i) {
    text += i % 3 == 0 ? "ab " : i % 3 == 1 ? "a  " : "bé ";
    const Ids word = i % 3 == 0 ? Ids{8} : i % 3 == 1 ? Ids{6, 3} : Ids{3, 5, 9, 10};
    expected.insert(expected.end(), word.begin(), word.end());
  }
  // The first word has no space before it except the prepended one.
  Ids ids = Encode(*t, text);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.back(), 3) << "the final space";
  ids.pop_back();
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(Decode(*t, Encode(*t, text)), text);
}

TEST(PieceTokenizer, MetaspacePrependSchemesAndDecoder) {
  Json j;
  j["model"] = {{"type", "Unigram"},
                {"unk_id", 0},
                {"vocab", UnigramVocab({{"<unk>", 0.0}, {"▁", -1.0}, {"▁a", -1.5}, {"a", -1.0}, {"b", -2.0}, {"<x>", 0.0}})}};
  j["added_tokens"] = {{{"id", 5}, {"content", "<x>"}, {"special", true}}};
  for (const auto& [scheme, first, later] : {std::tuple{"always", Ids{2}, Ids{5, 2}}, std::tuple{"first", Ids{2}, Ids{5, 3}},
                                             std::tuple{"never", Ids{3}, Ids{5, 3}}}) {
    j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", scheme}, {"split", true}};
    j["decoder"] = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", scheme}, {"split", true}};
    auto t = Build(j);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(Encode(*t, "a"), first) << scheme;
    EXPECT_EQ(Encode(*t, "<x>a"), later) << scheme;
  }
  // What Hugging Face's tokenizers 0.23 gives for this vocabulary (checked
  // with its Node bindings): unknown é is <unk>; "  a" → ▁ ▁a; the decoder
  // drops every "▁" of the first token.
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}, {"split", true}};
  j["decoder"] = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}, {"split", true}};
  auto t = Build(j);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(Encode(*t, "  a"), (Ids{1, 2}));
  EXPECT_EQ(Encode(*t, "aé a"), (Ids{2, 0, 2}));
  EXPECT_EQ(Decode(*t, Ids{1, 2}), " a");
  EXPECT_EQ(Decode(*t, Ids{2, 0, 2}), "a<unk> a");
  // The old add_prefix_space field still says whether to prepend.
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "▁"}, {"add_prefix_space", false}};
  t = Build(j);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(Encode(*t, "a"), (Ids{3}));
}

// A SentencePiece Unigram model trained here, exported the way Hugging
// Face's converters write tokenizer.json (pieces and scores, Metaspace,
// control pieces as special added tokens).
class UnigramAgainstSentencePiece : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshTestDirectory("pw_unigram_"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(UnigramAgainstSentencePiece, IdsAndTextsEqualLibsentencepiece) {
  {
    std::ofstream corpus(dir_ / "corpus.txt");
    for (int i = 0; i < 300; ++i) {
      corpus << "the quick brown fox jumps over the lazy dog " << i * 37 << "\n"
             << "pipelines keep every stage busy; bubbles are idle time, harvested by side tasks\n"
             << "Größe, naïve café — déjà vu (x+y)**2 == z\n";
    }
  }
  const auto trained = sentencepiece::SentencePieceTrainer::Train(
      "--input=" + (dir_ / "corpus.txt").string() + " --model_prefix=" + (dir_ / "m").string() +
      " --vocab_size=420 --model_type=unigram --byte_fallback=true --normalization_rule_name=identity"
      " --remove_extra_whitespaces=false --minloglevel=2");
  ASSERT_TRUE(trained.ok()) << trained.ToString();
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.Load((dir_ / "m.model").string()).ok());

  Json vocab = Json::array(), added = Json::array();
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    vocab.push_back(Json::array({sp.IdToPiece(id), sp.GetScore(id)}));
    if (sp.IsControl(id) || sp.IsUnknown(id)) {
      added.push_back({{"id", id}, {"content", sp.IdToPiece(id)}, {"special", true}});
    }
  }
  Json j;
  j["model"] = {{"type", "Unigram"}, {"unk_id", sp.unk_id()}, {"vocab", vocab}, {"byte_fallback", true}};
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}, {"split", true}};
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", {{{"type", "ByteFallback"}}, {{"type", "Metaspace"}, {"replacement", "▁"},
                                                              {"prepend_scheme", "always"}, {"split", true}}}}};
  j["added_tokens"] = added;
  auto t = Build(j);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->vocab_size(), sp.GetPieceSize());
  for (const char* text :
       {"the quick brown fox", "pipelines keep every stage busy", "two spaces  and   a run",
        "unseen words: zebra xylophone", "Größe naïve déjà", "数字 1234567 and emoji 🙂🧑‍💻", "(x+y)**2 == z\ttab",
        "lazy dogs harvested 9990 bubbles", "a", "trailing space "}) {
    std::vector<int> want;
    ASSERT_TRUE(sp.Encode(text, &want).ok());
    EXPECT_EQ(Encode(*t, text), Ids(want.begin(), want.end())) << text;
    std::string want_text;
    ASSERT_TRUE(sp.Decode(want, &want_text).ok());
    EXPECT_EQ(Decode(*t, Ids(want.begin(), want.end())), want_text) << text;
  }
  // The one known difference (Hugging Face's, not ours): SentencePiece
  // prepends its "▁" even to a text that starts with a space; Metaspace
  // only to one that does not. So "  a" has one "▁" piece fewer.
  std::vector<int> want;
  ASSERT_TRUE(sp.Encode("  leading spaces", &want).ok());
  ASSERT_EQ(want.front(), sp.PieceToId("▁"));
  EXPECT_EQ(Encode(*t, "  leading spaces"), Ids(want.begin() + 1, want.end()));
}

// Each malformed or unsupported file names itself and the field at fault.
void ExpectRefused(const Json& j, const std::string& needle) {
  Status status = Status::Ok();
  auto file = ReadTokenizerJson(j.dump(), "models/x/tokenizer.json");
  if (!file.ok()) {
    status = file.status();
  } else if (auto* pieces = std::get_if<PieceFile>(&file.value())) {
    auto t = PieceTokenizer::Create(std::move(pieces->tables), std::move(pieces->options), "models/x/tokenizer.json");
    ASSERT_FALSE(t.ok()) << "expected an error mentioning " << needle;
    status = t.status();
  }
  ASSERT_FALSE(status.ok()) << "expected an error mentioning " << needle;
  EXPECT_NE(status.message().find("models/x/tokenizer.json"), std::string::npos) << status.ToString();
  EXPECT_NE(status.message().find(needle), std::string::npos) << status.ToString();
}

TEST(PieceTokenizer, UnsupportedOrMalformedFilesAreRefusedWithFileAndField) {
  Json j = LlamaShapedJson();
  j["normalizer"]["normalizers"][1]["pattern"] = {{"Regex", " +"}};
  ExpectRefused(j, "normalizer.normalizers[1].pattern {\"Regex\": …} is not supported");

  j = LlamaShapedJson();
  j["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", "AAAA"}};
  ExpectRefused(j, "normalizer.type 'Precompiled'");

  j = LlamaShapedJson();
  j["normalizer"] = {{"type", "BertNormalizer"}};
  ExpectRefused(j, "normalizer.type 'BertNormalizer'");

  j = LlamaShapedJson();
  j["model"]["type"] = "WordPiece";
  ExpectRefused(j, "model.type 'WordPiece'");

  j = LlamaShapedJson();
  j["model"]["unk_token"] = "<missing>";
  ExpectRefused(j, "model.unk_token '<missing>' is not in model.vocab");

  j = LlamaShapedJson();
  j["model"]["merges"].push_back("b zz");
  ExpectRefused(j, "merge 4 ('b' 'zz')");

  j = LlamaShapedJson();
  j["model"]["dropout"] = 0.1;
  ExpectRefused(j, "model.dropout");

  j = LlamaShapedJson();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  ExpectRefused(j, "pre_tokenizer.type 'Whitespace'");

  j = LlamaShapedJson();
  j["decoder"]["decoders"][0] = {{"type", "WordPiece"}};
  ExpectRefused(j, "decoder.decoders[0].type 'WordPiece'");

  j = LlamaShapedJson();
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "sometimes"}};
  ExpectRefused(j, "pre_tokenizer.prepend_scheme must be \"always\", \"first\" or \"never\"");

  Json unigram;
  unigram["model"] = {{"type", "Unigram"}, {"unk_id", 7}, {"vocab", UnigramVocab({{"<unk>", 0.0}, {"a", -1.0}})}};
  ExpectRefused(unigram, "model.unk_id must index model.vocab (2 pieces)");
  unigram["model"] = {{"type", "Unigram"}, {"unk_id", 0}, {"vocab", UnigramVocab({{"<unk>", 0.0}})}};
  unigram["model"]["vocab"].push_back(Json::array({"a"}));
  ExpectRefused(unigram, "model.vocab[1] must be [piece, score]");
  unigram["model"]["vocab"][1] = Json::array({"a", "high"});
  ExpectRefused(unigram, "model.vocab[1] must be [piece, score]");
  unigram["model"]["vocab"][1] = Json::array({"a", -1.0});
  unigram["decoder"] = {{"type", "Strip"}, {"content", 5}};
  ExpectRefused(unigram, "wrong type");
}

}  // namespace
}  // namespace pw
