// TokenizeCorpus: text files, JSONL or directories of them → token shards
// (token_shard.h) with a model's tokenizer, resumably. What `pipewright
// tokenize` runs.
//
// Documents: a text file is one document; each JSONL line (files ending in
// .jsonl or .json) is one, its `field` string the text. Every document is
// written as [BOS if the tokenizer adds one] + ids + [EOS], so documents are
// separated by EOS as llm.c's and nanoGPT's GPT-2 shards are. Files are
// read in order (a directory: its files, recursively, by name; hidden files
// and the output directory skipped), large text files in ~1 MiB chunks cut
// after a newline that a non-space follows where the tokenizer encodes such
// cuts as the whole (Tokenizer::EncodesNewlineCutsAlike; otherwise a text
// file is one chunk).
//
// Shards: the first `val_tokens` tokens (rounded up to the chunk) go to
// val_000000.bin, the rest to train_000000.bin, train_000001.bin, … of at
// least `shard_tokens` tokens each (a shard closes at the first chunk end
// past that). After each shard the progress lands in OUT/tokenize.json, so
// a run that is stopped resumes at the last whole shard when started
// again with the same inputs and options, and a finished run is a no-op.
//
// Thread-safety: one call at a time per output directory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "text/tokenizer.h"

namespace pw {

struct TokenizeOptions {
  std::vector<std::string> inputs;  // files or directories
  std::string out_dir;
  std::string field = "text";       // JSONL: the key holding the text
  int64_t shard_tokens = 100'000'000;
  int64_t val_tokens = 0;           // 0: no validation shard
  std::string tokenizer_name;       // recorded in the manifest (a path or "bytes")
};

struct TokenizeProgress {
  int64_t bytes_done = 0, bytes_total = 0;
  int64_t tokens = 0, documents = 0;
  int64_t shards = 0;
  double seconds = 0;
};

struct TokenizeSummary {
  TokenizeProgress totals;            // of the whole output, resumed parts included
  int64_t bytes_this_run = 0;         // read and encoded by this call
  double seconds_this_run = 0;
  bool resumed = false;               // continued a stopped run
  bool already_done = false;          // the output was complete: nothing done
  bool stopped = false;               // on_progress asked to stop: resumable, not complete
  std::vector<std::string> shards;    // file names, in order
};

// Runs (or resumes) the job. `on_progress` (may be empty) is called after
// every chunk, on this thread; returning false stops the run there (as an
// interrupt would: the shard being filled is dropped, and a later call
// resumes after the last whole shard). Blocks on file I/O. Errors name the file
// (and line, for JSONL): NotFound for a missing input; InvalidArgument for
// a malformed JSONL line, text that is not UTF-8, an output directory that
// holds another run's shards; IoError for a failed write. Shards committed
// before an error stay valid and are resumed from.
Result<TokenizeSummary> TokenizeCorpus(const TokenizeOptions& options, const Tokenizer& tokenizer,
                                       const std::function<bool(const TokenizeProgress&)>& on_progress);

}  // namespace pw
