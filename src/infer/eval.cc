#include "infer/eval.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>

#include "comm/gather.h"
#include "comm/process_groups.h"
#include "core/file_io.h"
#include "infer/infer_settings.h"
#include "infer/infer_worker.h"
#include "infer/model_weights.h"

#include <nlohmann/json.hpp>

namespace pw {

std::vector<EvalWindow> EvalWindows(int64_t text_tokens, int64_t seq_len, int64_t max_windows) {
  std::vector<EvalWindow> windows;
  for (int64_t begin = 0; begin + 1 < text_tokens; begin += seq_len) {
    if (max_windows > 0 && static_cast<int64_t>(windows.size()) >= max_windows) break;
    windows.push_back({begin, std::min(seq_len + 1, text_tokens - begin)});
  }
  return windows;
}

std::vector<WindowScore> ScoreWindows(const GptSegment& model, const std::vector<int64_t>& tokens,
                                      const std::vector<EvalWindow>& windows, int batch,
                                      const std::function<void(size_t)>& progress, const GptSegment* reference) {
  c10::NoGradGuard no_grad;
  std::vector<WindowScore> scores(windows.size());
  size_t next = 0;
  while (next < windows.size()) {
    // Consecutive windows of one length (all but the last are full).
    size_t end = next;
    while (end < windows.size() && end - next < static_cast<size_t>(batch) &&
           windows[end].length == windows[next].length) {
      ++end;
    }
    const int64_t rows = static_cast<int64_t>(end - next), t = windows[next].length - 1;
    at::Tensor bytes = at::empty({rows, t + 1}, at::kLong);
    auto* out = bytes.data_ptr<int64_t>();
    for (size_t w = next; w < end; ++w) {
      for (int64_t i = 0; i <= t; ++i) *out++ = tokens[static_cast<size_t>(windows[w].begin + i)];
    }
    const at::Tensor targets = bytes.narrow(1, 1, t).unsqueeze(-1);
    auto token_logp = [&](const at::Tensor& logits) {  // [rows, t]
      return at::log_softmax(logits.to(at::kDouble), -1).gather(-1, targets).squeeze(-1);
    };
    const at::Tensor logits = model.ForwardLogits(bytes.narrow(1, 0, t), ForwardContext{});
    const at::Tensor picked = token_logp(logits);
    const at::Tensor nll = -picked.sum(1).contiguous();
    for (int64_t r = 0; r < rows; ++r) scores[next + r] = {nll[r].item<double>(), t};
    if (reference != nullptr) {
      const at::Tensor ref_logits = reference->ForwardLogits(bytes.narrow(1, 0, t), ForwardContext{});
      const at::Tensor ref_picked = token_logp(ref_logits);
      const at::Tensor abs_delta = (picked - ref_picked).abs().sum(1);
      const at::Tensor agree = logits.argmax(-1).eq(ref_logits.argmax(-1)).sum(1);
      for (int64_t r = 0; r < rows; ++r) {
        WindowScore& s = scores[next + r];
        s.reference_nll = -ref_picked[r].sum().item<double>();
        s.abs_delta = abs_delta[r].item<double>();
        s.agree = agree[r].item<int64_t>();
      }
    }
    next = end;
    if (progress) progress(next);
  }
  return scores;
}

Status CheckEvalTextLength(const std::string& data, int64_t text_tokens) {
  if (text_tokens >= 2) return Status::Ok();
  return Status::InvalidArgument("--data " + data + " has " + std::to_string(text_tokens) +
                                 " tokens; scoring needs at least 2 (one to predict from, one to predict)");
}

EvalFigures CombineScores(const std::vector<WindowScore>& scores, double bytes_per_token) {
  EvalFigures f;
  double nll = 0, reference_nll = 0, abs_delta = 0;
  int64_t agree = 0;
  for (const WindowScore& s : scores) {
    nll += s.nll;
    f.tokens += s.tokens;
    reference_nll += s.reference_nll;
    abs_delta += s.abs_delta;
    agree += s.agree;
  }
  f.windows = static_cast<int64_t>(scores.size());
  const double tokens = static_cast<double>(std::max<int64_t>(f.tokens, 1));
  f.loss = f.tokens > 0 ? nll / static_cast<double>(f.tokens) : 0;
  f.reference_loss = reference_nll / tokens;
  f.loss_delta = f.loss - f.reference_loss;
  f.mean_abs_token_delta = abs_delta / tokens;
  f.greedy_agreement = static_cast<double>(agree) / tokens;
  f.perplexity = std::exp(f.loss);
  f.bits_per_byte = f.loss / std::log(2.0) / bytes_per_token;
  return f;
}

namespace {

// "index nll tokens" lines, exact (%.17g): what a rank hands to rank 0.
std::string FormatScores(const std::vector<size_t>& indices, const std::vector<WindowScore>& scores) {
  std::string text;
  char line[160];
  for (size_t i = 0; i < indices.size(); ++i) {
    const WindowScore& s = scores[i];
    std::snprintf(line, sizeof(line), "%zu %.17g %" PRId64 " %.17g %.17g %" PRId64 "\n", indices[i], s.nll, s.tokens,
                  s.reference_nll, s.abs_delta, s.agree);
    text += line;
  }
  return text;
}

// Reads FormatScores' lines (sscanf reads "nan" and "inf" back, which an
// istream would stop at); every line must parse.
Status ParseScores(const std::string& text, int rank, std::vector<WindowScore>& all, std::vector<bool>& seen) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t index = 0;
    WindowScore s;
    if (std::sscanf(line.c_str(), "%zu %lf %" SCNd64 " %lf %lf %" SCNd64, &index, &s.nll, &s.tokens, &s.reference_nll,
                    &s.abs_delta, &s.agree) != 6 || index >= all.size() ||
        seen[index]) {
      return Status::Internal("eval: rank " + std::to_string(rank) + " sent an unreadable, repeated or "
                              "out-of-range window score: '" + line + "'");
    }
    all[index] = s;
    seen[index] = true;
  }
  return Status::Ok();
}

std::string FiguresJson(const EvalJob& job, const EvalFigures& f, const std::string& model_note, int64_t seq_len,
                        int ranks, double seconds) {
  nlohmann::json j;
  j["data"] = job.data;
  j["model"] = model_note;
  j["seq_len"] = seq_len;
  j["ranks"] = ranks;
  j["windows"] = f.windows;
  j["tokens"] = f.tokens;
  j["loss"] = f.loss;
  j["perplexity"] = f.perplexity;
  j["bits_per_byte"] = f.bits_per_byte;
  j["weights"] = job.weights;
  if (job.weights != "fp32") {
    j["loss_fp32"] = f.reference_loss;
    j["loss_delta"] = f.loss_delta;
    j["mean_abs_token_loss_delta"] = f.mean_abs_token_delta;
    j["greedy_agreement"] = f.greedy_agreement;
  }
  j["seconds"] = seconds;
  j["tokens_per_s"] = seconds > 0 ? static_cast<double>(f.tokens) / seconds : 0;
  return j.dump();
}

}  // namespace

Result<std::string> RunEvalRank(const EvalJob& job, const WorldInfo& world) {
  const auto start = std::chrono::steady_clock::now();
  std::string model_note;
  PW_ASSIGN_OR_RETURN(WeightSource source,
                      ResolveWeightSource(job.checkpoint, job.model_dir, job.config, job.set, job.seed, &model_note));
  PW_ASSIGN_OR_RETURN(std::unique_ptr<GptSegment> model, LoadWholeModel(source));
  // Another format: the model rounded as inference holds it, scored against
  // the fp32 one.
  Result<WeightFormat> parsed = ParseWeightFormat(job.weights);
  if (!parsed.ok()) return parsed.status().WithContext("--weights");
  const WeightFormat format = *parsed;
  std::unique_ptr<GptSegment> reference;
  if (format != WeightFormat::kFp32) {
    PW_ASSIGN_OR_RETURN(reference, LoadWholeModel(source));
    RoundToFormat(*model, format);
  }
  PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile(job.data));
  Result<std::unique_ptr<Tokenizer>> tokenizer = LoadModelTokenizer(job.tokenizer, TokenizerDirOf(job.model_dir, job.checkpoint), model->config());
  if (!tokenizer.ok()) return tokenizer.status().WithContext("eval");
  Result<std::vector<int32_t>> ids = (*tokenizer)->Encode(text);
  if (!ids.ok()) return ids.status().WithContext("--data " + job.data);
  std::vector<int64_t> tokens;
  const SpecialTokens& special = (*tokenizer)->special();
  if (special.add_bos && special.bos) tokens.push_back(*special.bos);
  tokens.insert(tokens.end(), ids->begin(), ids->end());
  const double bytes_per_token =
      tokens.empty() ? 1.0 : static_cast<double>(text.size()) / static_cast<double>(tokens.size());
  const int64_t seq_len = model->config().seq_len;
  PW_RETURN_IF_ERROR(CheckEvalTextLength(job.data, static_cast<int64_t>(tokens.size())));
  const std::vector<EvalWindow> windows = EvalWindows(static_cast<int64_t>(tokens.size()), seq_len, job.max_windows);
  // Meet before the work, so that a rank that never comes is named at once.
  std::optional<ProcessGroups> groups;
  if (world.world_size > 1) {
    ProcessGroupsOptions options;
    options.timeout = std::chrono::seconds(job.collective_timeout);
    options.exit_after_failure = true;  // a failed group ends the rank
    PW_ASSIGN_OR_RETURN(ProcessGroups created, ProcessGroups::Create(world, options));
    groups.emplace(std::move(created));
  }
  std::vector<size_t> mine;
  std::vector<EvalWindow> my_windows;
  for (size_t w = static_cast<size_t>(world.rank); w < windows.size(); w += static_cast<size_t>(world.world_size)) {
    mine.push_back(w);
    my_windows.push_back(windows[w]);
  }
  // Long texts: rank 0 says how far its share is, every 5 s, on stderr
  // (stdout carries the figures).
  auto last_said = std::chrono::steady_clock::now();
  auto say_progress = [&](size_t done) {
    if (world.rank != 0 || std::chrono::steady_clock::now() - last_said < std::chrono::seconds(5)) return;
    last_said = std::chrono::steady_clock::now();
    std::fprintf(stderr, "eval: rank 0 scored %zu of its %zu windows\n", done, my_windows.size());
  };
  const std::vector<WindowScore> my_scores =
      ScoreWindows(*model, tokens, my_windows, job.batch, say_progress, reference.get());

  std::vector<WindowScore> all(windows.size());
  std::vector<bool> seen(windows.size(), false);
  if (!groups) {
    all = my_scores;
  } else {
    PW_ASSIGN_OR_RETURN(std::vector<std::string> reports,
                        GatherStrings(groups->world(), FormatScores(mine, my_scores)));
    if (world.rank != 0) return std::string();
    for (size_t r = 0; r < reports.size(); ++r) {
      PW_RETURN_IF_ERROR(ParseScores(reports[r], static_cast<int>(r), all, seen));
    }
    for (size_t w = 0; w < seen.size(); ++w) {
      if (!seen[w]) return Status::Internal("eval: no rank reported window " + std::to_string(w));
    }
  }
  for (size_t w = 0; w < all.size(); ++w) {
    if (!std::isfinite(all[w].nll)) {
      return Status::InvalidArgument(
          "the loss of window " + std::to_string(w) + " (tokens " + std::to_string(windows[w].begin) + " to " +
          std::to_string(windows[w].begin + windows[w].length - 1) + ") is " + std::to_string(all[w].nll) +
          ": the model's logits are not finite there (a diverged checkpoint, or a random init too large)");
    }
  }
  if (world.rank != 0) return std::string();
  const EvalFigures f = CombineScores(all, bytes_per_token);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return FiguresJson(job, f, model_note, seq_len, world.world_size, seconds);
}

std::string EvalText(const std::string& json_text) {
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return json_text;
  auto number = [&j](const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0; };
  auto text = [&j](const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : ""; };
  char lines[1536];
  std::snprintf(lines, sizeof(lines),
                "model: %s\nscored %s: %" PRId64 " tokens in %" PRId64 " windows of up to %" PRId64 " on %d rank(s)\n"
                "loss %.4f nats/token  perplexity %.3f  %.4f bits/byte  (%.1f s, %.0f tokens/s)",
                text("model").c_str(), text("data").c_str(), static_cast<int64_t>(number("tokens")),
                static_cast<int64_t>(number("windows")), static_cast<int64_t>(number("seq_len")),
                static_cast<int>(number("ranks")), number("loss"), std::exp(number("loss")), number("bits_per_byte"),
                number("seconds"), number("tokens_per_s"));
  std::string out = lines;
  if (text("weights") != "" && text("weights") != "fp32") {
    std::snprintf(lines, sizeof(lines),
                  "\nweights %s against fp32 (loss %.4f): loss %+.5f nats/token, mean |per-token difference| "
                  "%.5f nats, the most likely next token agrees at %.2f%% of positions",
                  text("weights").c_str(), number("loss_fp32"), number("loss_delta"),
                  number("mean_abs_token_loss_delta"), 100 * number("greedy_agreement"));
    out += lines;
  }
  return out;
}

}  // namespace pw
