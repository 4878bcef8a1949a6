// pipewright eval's pieces: the windows cover every byte but the first
// exactly once; a window's score equals the training loss of the same
// tokens (StageModule's forward and cross-entropy, an independent code
// path); batching does not change the
// scores beyond rounding; the figures add up.
#include "infer/eval.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "infer/infer_test_util.h"
#include "infer/model_weights.h"
#include "model/stage_module.h"

namespace pw {
namespace {

TEST(EvalWindowsTest, EveryByteButTheFirstIsPredictedOnce) {
  const std::vector<EvalWindow> w = EvalWindows(10, 4, 0);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].begin, 0);
  EXPECT_EQ(w[0].length, 5);
  EXPECT_EQ(w[1].begin, 4);
  EXPECT_EQ(w[1].length, 5);
  EXPECT_EQ(w[2].begin, 8);
  EXPECT_EQ(w[2].length, 2);
  int64_t predicted = 0;
  for (const EvalWindow& x : w) predicted += x.length - 1;
  EXPECT_EQ(predicted, 9);
  EXPECT_EQ(EvalWindows(9, 4, 0).size(), 2u);  // 8 predictions in two full windows
  EXPECT_TRUE(EvalWindows(1, 4, 0).empty());
  EXPECT_TRUE(EvalWindows(0, 4, 0).empty());
  EXPECT_EQ(EvalWindows(1000, 4, 7).size(), 7u);
}

TEST(EvalScoreTest, AWindowsScoreIsTheTrainingLossOfItsTokens) {
  const ModelConfig config = SmallTestConfig(32, 2, 16);
  WeightSource source{"", config, 77};
  Result<std::unique_ptr<GptSegment>> model = LoadWholeModel(source);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  std::string text;
  for (int i = 0; i < 61; ++i) text += static_cast<char>((i * 37 + 11) % 256);
  const std::vector<EvalWindow> windows = EvalWindows(static_cast<int64_t>(text.size()), config.seq_len, 0);
  ASSERT_EQ(windows.size(), 4u);  // 3 full windows of 17 bytes, then 13 bytes
  const std::vector<int64_t> tokens(reinterpret_cast<const unsigned char*>(text.data()),
                                    reinterpret_cast<const unsigned char*>(text.data()) + text.size());
  const std::vector<WindowScore> scores = ScoreWindows(**model, tokens, windows, /*batch=*/8);

  StageModule trainer(config, WholeModelSpan(config), 77);
  for (size_t w = 0; w < windows.size(); ++w) {
    const int64_t t = windows[w].length - 1;
    at::Tensor bytes = at::empty({1, t + 1}, at::kLong);
    for (int64_t i = 0; i <= t; ++i) bytes[0][i] = static_cast<unsigned char>(text[windows[w].begin + i]);
    Result<at::Tensor> loss = trainer.Forward(static_cast<MicrobatchId>(w), bytes.narrow(1, 0, t).contiguous(),
                                              bytes.narrow(1, 1, t).contiguous());
    ASSERT_TRUE(loss.ok()) << loss.status().ToString();
    EXPECT_EQ(scores[w].tokens, t);
    EXPECT_NEAR(scores[w].nll / static_cast<double>(t), loss->item<double>(), 1e-5) << "window " << w;
  }
  // One window per pass: the same scores up to the rounding of batched GEMMs.
  const std::vector<WindowScore> single = ScoreWindows(**model, tokens, windows, /*batch=*/1);
  // (fp32 sums in another order: a few ulps of each token's loss.)
  for (size_t w = 0; w < windows.size(); ++w) EXPECT_NEAR(single[w].nll, scores[w].nll, 1e-6 * std::abs(scores[w].nll));

  const EvalFigures f = CombineScores(scores);
  EXPECT_EQ(f.windows, 4);
  EXPECT_EQ(f.tokens, 60);
  double nll = 0;
  for (const WindowScore& s : scores) nll += s.nll;
  EXPECT_DOUBLE_EQ(f.loss, nll / 60);
  EXPECT_NEAR(f.perplexity, std::exp(f.loss), 1e-12);
  EXPECT_NEAR(f.bits_per_byte * std::log(2.0), f.loss, 1e-12);
  // A random byte model: the loss is near ln 256 (init_std 0.2 spreads it a little).
  EXPECT_NEAR(f.loss, std::log(256.0), 1.5);
}

}  // namespace
}  // namespace pw
