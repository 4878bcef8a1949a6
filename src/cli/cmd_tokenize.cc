// `pipewright tokenize`: text files, JSONL or directories → token shards
// (text/tokenize_corpus.h) with a model's own tokenizer, for `train --data`.
// A planning-side command: it links no LibTorch, so it starts at once.
// Ctrl-C stops it after the current chunk; running it again resumes.
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/number_checks.h"
#include "os/process.h"
#include "text/tokenize_corpus.h"
#include "text/tokenizer_loader.h"
#include "viz/progress.h"

namespace pw::cli {
namespace {

struct TokenizeCommand {
  std::string tokenizer;
  std::string model;
  TokenizeOptions options;
  bool json = false;
  std::vector<std::string> texts;  // --text: print their ids instead of writing shards
};

volatile std::sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }

// One JSON line per text: its ids (with BOS when the tokenizer adds one)
// and each id's piece: as the vocabulary writes it where the kind has such
// pieces (SentencePiece style: "▁Hello"), else the text it decodes to.
Status PrintIds(const std::vector<std::string>& texts, const Tokenizer& tokenizer) {
  for (const std::string& text : texts) {
    PW_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer.Encode(text));
    const SpecialTokens& special = tokenizer.special();
    if (special.add_bos && special.bos) ids.insert(ids.begin(), *special.bos);
    nlohmann::json pieces = nlohmann::json::array();
    for (int32_t id : ids) {
      if (std::optional<std::string> piece = tokenizer.PieceText(id)) {
        pieces.push_back(*piece);
        continue;
      }
      Result<std::string> piece = tokenizer.Decode(std::vector<int32_t>{id});
      pieces.push_back(piece.ok() ? *piece : std::string());
    }
    const nlohmann::json line = {{"text", text}, {"ids", ids}, {"pieces", pieces}};
    std::printf("%s\n", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  return Status::Ok();
}

Status RunTokenize(TokenizeCommand& c) {
  if (!c.tokenizer.empty() && !c.model.empty()) {
    return Status::InvalidArgument("give --tokenizer or --model, not both");
  }
  const std::string source = !c.tokenizer.empty() ? c.tokenizer : c.model;
  if (source.empty()) {
    return Status::InvalidArgument("no tokenizer: give --model DIR (a Hugging Face model directory), "
                                   "--tokenizer PATH, or --tokenizer bytes for the byte-level model");
  }
  std::unique_ptr<Tokenizer> tokenizer;
  if (source == "bytes") {
    tokenizer = MakeByteTokenizer();
  } else {
    PW_ASSIGN_OR_RETURN(tokenizer, LoadTokenizer(source));
  }
  if (!c.texts.empty()) return PrintIds(c.texts, *tokenizer);
  if (c.options.inputs.empty() || c.options.out_dir.empty()) {
    return Status::InvalidArgument("give input files or directories and --out DIR (or --text STRING to see ids)");
  }
  c.options.tokenizer_name = source;
  ProgressPrinter progress(stderr, IsTerminal(stderr) ? ProgressMode::kInPlace : ProgressMode::kPlain);
  g_interrupted = 0;
  HandleInterrupts(OnInterrupt);
  auto on_progress = [&](const TokenizeProgress& p) {
    ProgressInfo info;
    info.label = "tokenize";
    info.unit = "MB";
    info.step = p.bytes_done / 1000000;
    info.total = std::max<int64_t>(1, p.bytes_total / 1000000);
    info.show_loss = false;
    info.tokens_per_s = p.seconds > 0 ? static_cast<double>(p.tokens) / p.seconds : 0;
    info.elapsed_s = p.seconds;
    info.note = std::to_string(p.shards) + " shards";
    progress.Update(info);
    return g_interrupted == 0;
  };
  Result<TokenizeSummary> result = TokenizeCorpus(c.options, *tokenizer, on_progress);
  progress.Finish();
  DefaultInterrupts();
  PW_RETURN_IF_ERROR(result.status());
  const TokenizeSummary& s = *result;
  const double mb_per_s = s.seconds_this_run > 0 ? static_cast<double>(s.bytes_this_run) / 1e6 / s.seconds_this_run : 0;
  if (c.json) {
    nlohmann::json j = {{"out", c.options.out_dir},
                        {"tokenizer", source},
                        {"tokenizer_kind", std::string(tokenizer->kind())},
                        {"vocab_size", tokenizer->vocab_size()},
                        {"documents", s.totals.documents},
                        {"tokens", s.totals.tokens},
                        {"bytes", s.totals.bytes_done},
                        {"shards", s.shards},
                        {"bytes_this_run", s.bytes_this_run},
                        {"seconds_this_run", s.seconds_this_run},
                        {"mb_per_s", mb_per_s},
                        {"resumed", s.resumed},
                        {"already_done", s.already_done},
                        {"complete", !s.stopped}};
    std::printf("%s\n", j.dump(2).c_str());
  } else if (s.already_done) {
    std::printf("%s is complete already (%lld tokens in %zu shards); nothing to do\n", c.options.out_dir.c_str(),
                static_cast<long long>(s.totals.tokens), s.shards.size());
  } else {
    std::printf("%s %lld documents, %lld tokens (%s) into %zu shards in %s%s; %.1f MB/s\n",
                s.stopped ? "stopped after" : "tokenized", static_cast<long long>(s.totals.documents),
                static_cast<long long>(s.totals.tokens), std::string(tokenizer->kind()).c_str(), s.shards.size(),
                c.options.out_dir.c_str(), s.resumed ? " (resumed)" : "", mb_per_s);
  }
  if (s.stopped) {
    return Status::FailedPrecondition("stopped by a signal; run the same command again to resume from the last "
                                      "whole shard");
  }
  return Status::Ok();
}

}  // namespace

void AddTokenizeCommand(CLI::App& app, CommandContext& ctx) {
  auto c = std::make_shared<TokenizeCommand>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Turn text files, JSONL or directories into token shards for `train --data` (llm.c layout)");
  cmd->add_option("inputs", c->options.inputs, "Text files, JSONL files (.jsonl/.json: one document per line) or "
                                       "directories (their files, recursively, by name)");
  cmd->add_option("--out", c->options.out_dir,
                  "Output directory: val_000000.bin, train_000000.bin, ... and tokenize.json (resumable)");
  cmd->add_option("--text", c->texts, "Print this text's token ids (JSON line) instead of writing shards; repeatable");
  cmd->add_option("--model", c->model, "Hugging Face model directory whose tokenizer to use");
  cmd->add_option("--tokenizer", c->tokenizer,
                  "tokenizer.json, tokenizer.model, GPT-2's vocab.json, a directory holding one, or 'bytes'");
  cmd->add_option("--field", c->options.field, "JSONL: the key holding each document's text")->capture_default_str();
  cmd->add_option("--shard-tokens", c->options.shard_tokens, "Tokens per training shard (at least)")
      ->check(Positive())
      ->capture_default_str();
  cmd->add_option("--val-tokens", c->options.val_tokens,
                  "Tokens for the validation shard val_000000.bin, taken first (0: none)")
      ->check(NonNegative())
      ->capture_default_str();
  cmd->add_flag("--json", c->json, "Print the summary as JSON");
  cmd->callback([c, &ctx] { ctx.run = [c] { return RunTokenize(*c); }; });
}

}  // namespace pw::cli
