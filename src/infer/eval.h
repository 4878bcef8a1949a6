// Scoring a text: the per-token loss of a model on a text — mean negative
// log-likelihood in nats, perplexity and bits per byte — the figures that
// compare checkpoints and check numerics (`pipewright eval`).
//
// The text is encoded by the model's tokenizer (bytes for the byte-level
// model; BOS first when the tokenizer asks). The tokens are cut into
// windows of the model's seq_len: window w holds tokens [w·L, w·L + L]
// (L + 1 tokens, the last one shorter), feeds its first tokens and predicts
// each next one, so every token but the first is predicted exactly once,
// with up to L tokens of context.
// Data-parallel: window w is scored on rank w % ranks, each rank with the
// whole model (GptSegment, the trainer's forward); world rank 0 adds the
// windows' scores in window order, so the figures do not depend on the
// number of ranks beyond the rounding of batched GEMMs.
//
// Thread-safety: pure functions, and one rank's body. Failure: Status naming
// the flag or file; a peer's failure as the group's Status.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/world_info.h"
#include "core/status.h"
#include "job/eval_job.h"
#include "model/gpt.h"

namespace pw {

struct EvalWindow {
  int64_t begin = 0;   // first token
  int64_t length = 0;  // tokens, >= 2: predicts length - 1 of them
};

// The windows of a text of `text_tokens` tokens for a model of `seq_len`,
// the first `max_windows` of them (0: all). Empty when text_tokens < 2. Pure.
std::vector<EvalWindow> EvalWindows(int64_t text_tokens, int64_t seq_len, int64_t max_windows);

// InvalidArgument naming `data` when a text of `text_tokens` tokens has no
// window (fewer than 2 tokens); OK otherwise. Pure.
Status CheckEvalTextLength(const std::string& data, int64_t text_tokens);

struct WindowScore {
  double nll = 0;      // summed negative log-likelihood of its predictions, nats
  int64_t tokens = 0;  // predictions
  // Against a reference model (ScoreWindows' `reference`; else 0): its
  // summed nll, the summed |nll - reference's| per prediction, and the
  // predictions where both models' most likely token is the same.
  double reference_nll = 0, abs_delta = 0;
  int64_t agree = 0;
};

// Scores `windows` of `text` with `model`, `batch` windows of equal length
// per forward pass; one score per window, in order. log_softmax in double
// precision. `progress` (may be empty) is called after each pass with the
// windows scored so far. `reference` (may be null): a model of the same
// config scored on the same windows, for the comparison fields. Blocks
// (compute).
std::vector<WindowScore> ScoreWindows(const GptSegment& model, const std::vector<int64_t>& tokens,
                                      const std::vector<EvalWindow>& windows, int batch,
                                      const std::function<void(size_t)>& progress = nullptr,
                                      const GptSegment* reference = nullptr);

struct EvalFigures {
  int64_t windows = 0, tokens = 0;
  double loss = 0;           // nats per token
  double perplexity = 0;     // exp(loss)
  double bits_per_byte = 0;  // loss / ln 2 / bytes_per_token
  // Against the reference (0 without one): its loss, loss - its loss, the
  // mean |per-token loss difference|, and the share of predictions whose
  // most likely token both models agree on.
  double reference_loss = 0, loss_delta = 0, mean_abs_token_delta = 0, greedy_agreement = 0;
};

// Adds the scores in order; `bytes_per_token`: the text's bytes over its
// tokens (1 for the byte-level model), for bits per byte. Pure.
EvalFigures CombineScores(const std::vector<WindowScore>& scores, double bytes_per_token = 1.0);

// One rank of an eval job (`world` from the launcher or torchrun & co.):
// scores its windows; world rank 0 returns the job's figures as one JSON
// object (loss, perplexity, bits_per_byte, tokens, windows, seq_len, ranks,
// seconds, tokens_per_s, data, model), the other ranks "". Blocks.
Result<std::string> RunEvalRank(const EvalJob& job, const WorldInfo& world);

// The figures of RunEvalRank's JSON as three lines of text (no newline at
// the end). Pure.
std::string EvalText(const std::string& json_text);

}  // namespace pw
