// ByteCorpus: the training text as byte-level tokens (vocabulary 256), split
// into a training part and a held-out validation tail, and the deterministic
// batch sampler that lets every rank draw the same batches without sending
// any data: batch rows are a pure function of (seed, step, global
// microbatch, row).
//
// Default corpus: every regular file under /usr/share/common-licenses,
// sorted by name and concatenated (present on every Debian machine).
//
// Thread-safety: a loaded corpus is immutable; Sample may be called
// concurrently.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace pw {

inline constexpr const char* kDefaultCorpusDir = "/usr/share/common-licenses";

// One microbatch: token ids and next-byte targets, int64 [rows, seq_len].
struct TokenBatch {
  at::Tensor tokens;
  at::Tensor targets;
};

// The share of a corpus that training runs hold out for validation.
inline constexpr double kDefaultValidationFraction = 0.1;

class ByteCorpus {
 public:
  // Reads `path` (a file, or a directory whose regular files are read in
  // name order); empty = kDefaultCorpusDir. The last `val_fraction` of the
  // bytes is the validation split. Blocks on file I/O. NotFound / IoError for
  // the path; FailedPrecondition when either split is shorter than
  // seq_len + 1 bytes (the message says how long the text must be).
  static Result<ByteCorpus> Load(const std::string& path, int seq_len, double val_fraction);
  // A corpus from text already in memory (tests).
  static Result<ByteCorpus> FromText(std::string text, int seq_len, double val_fraction);

  size_t train_bytes() const { return train_.size(); }
  size_t val_bytes() const { return val_.size(); }

  // `rows` windows of seq_len + 1 bytes from the training split at offsets
  // drawn from (seed, step, microbatch): the same arguments give the same
  // batch in every process. Never fails.
  TokenBatch Sample(uint64_t seed, int64_t step, int64_t microbatch, int rows) const;
  // Validation batch `index`, same rule over the validation split.
  TokenBatch SampleValidation(uint64_t seed, int64_t index, int rows) const;

 private:
  ByteCorpus(std::vector<uint8_t> train, std::vector<uint8_t> val, int seq_len)
      : train_(std::move(train)), val_(std::move(val)), seq_len_(seq_len) {}
  TokenBatch Draw(const std::vector<uint8_t>& bytes, uint64_t key, int rows) const;

  std::vector<uint8_t> train_;
  std::vector<uint8_t> val_;
  int seq_len_ = 0;
};

}  // namespace pw
