// TrainCorpus: the training data as token ids, split into a training part
// and a held-out validation part, and the deterministic batch sampler that
// lets every rank draw the same batches without sending any data: batch
// rows are a pure function of (seed, step, global microbatch, row).
//
// Two sources:
//   - text (a file, or a directory's regular files in name order,
//     concatenated): byte-level tokens, vocabulary 256; the last
//     val_fraction of the bytes is the validation split. Default:
//     /usr/share/common-licenses (present on every Debian machine).
//   - token shards (text/token_shard.h; `pipewright tokenize` or llm.c): a
//     .bin shard, or a directory of them. Shards are memory-mapped, so only
//     the windows drawn are read. Shards with "val" as a part of their name
//     (val_000000.bin, llm.c's fineweb_val_000000.bin) are the validation
//     split; without any, the last val_fraction of the tokens is.
// A window of seq_len + 1 tokens never spans two shards.
//
// Thread-safety: a loaded corpus is immutable; Sample may be called
// concurrently.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace pw {

inline constexpr const char* kDefaultCorpusDir = "/usr/share/common-licenses";

// One microbatch: token ids and next-token targets, int64 [rows, seq_len].
struct TokenBatch {
  at::Tensor tokens;
  at::Tensor targets;
};

// The share of a corpus that training runs hold out for validation.
inline constexpr double kDefaultValidationFraction = 0.1;

class TrainCorpus {
 public:
  // Reads `path` (see above; empty = kDefaultCorpusDir). Blocks on file
  // I/O. NotFound / IoError for the path; InvalidArgument for a damaged
  // shard (named); FailedPrecondition when either split has no window of
  // seq_len + 1 tokens (the message says how long the data must be).
  static Result<TrainCorpus> Load(const std::string& path, int seq_len, double val_fraction);
  // A byte-level corpus from text already in memory (tests).
  static Result<TrainCorpus> FromText(std::string text, int seq_len, double val_fraction);

  // Whether the tokens come from shards (a model's tokenizer) rather than bytes.
  bool sharded() const { return sharded_; }
  // The largest token id in either split (reads every token once).
  int64_t MaxToken() const;
  // OK when a model of `vocab_size` ids can train on this corpus without
  // reading it: token shards, or text for a byte-level vocabulary (256).
  // InvalidArgument naming `path` and saying how to tokenize otherwise.
  Status CheckVocabulary(int64_t vocab_size, const std::string& path) const;

  // `rows` windows of seq_len + 1 tokens from the training split at offsets
  // drawn from (seed, step, microbatch): the same arguments give the same
  // batch in every process. Never fails.
  TokenBatch Sample(uint64_t seed, int64_t step, int64_t microbatch, int rows) const;
  // Validation batch `index`, same rule over the validation split.
  TokenBatch SampleValidation(uint64_t seed, int64_t index, int rows) const;

 private:
  // A run of tokens in memory: `count` ids of `width` bytes each.
  struct Piece {
    const uint8_t* data = nullptr;
    int width = 1;
    int64_t count = 0;
    int64_t At(int64_t i) const;
  };
  struct Storage;
  static Result<TrainCorpus> FromShards(const std::vector<std::string>& paths, int seq_len, double val_fraction);
  TokenBatch Draw(const std::vector<Piece>& split, uint64_t key, int rows) const;

  std::shared_ptr<const Storage> storage_;  // owns the bytes the pieces point into
  std::vector<Piece> train_, val_;
  int seq_len_ = 0;
  bool sharded_ = false;
};

}  // namespace pw
