#include "runtime/data.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "text/token_shard.h"

namespace pw {
namespace {

namespace fs = std::filesystem;

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

Result<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError("cannot read data file " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What a data file is: a token shard (".bin" with either magic number), a
// file shaped like one — ".bin" and at least a shard header long — with
// another magic (another tool's binary: never text), or anything else
// (read as text).
enum class DataFileKind { kShard, kForeignBinary, kText };

DataFileKind KindOf(const fs::path& path, int32_t* magic) {
  if (path.extension() != ".bin") return DataFileKind::kText;
  std::ifstream in(path, std::ios::binary);
  *magic = 0;
  in.read(reinterpret_cast<char*>(magic), sizeof(*magic));
  if (in && (*magic == kShardMagicU16 || *magic == kShardMagicU32)) return DataFileKind::kShard;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return !ec && size >= static_cast<uintmax_t>(kShardHeaderBytes) ? DataFileKind::kForeignBinary
                                                                   : DataFileKind::kText;
}

// Whether a shard holds validation tokens: "val" as a part of its name
// (val_000000.bin as `pipewright tokenize` writes, fineweb_val_000000.bin as llm.c does).
bool IsValidationShard(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  return name.rfind("val_", 0) == 0 || name.find("_val_") != std::string::npos ||
         name.find("_val.") != std::string::npos;
}

std::string TooShort(int64_t have, int seq_len, const char* unit) {
  const int64_t need = static_cast<int64_t>(seq_len) + 1;
  return "the data has " + std::to_string(have) + " " + unit + "; each split needs at least seq_len + 1 = " +
         std::to_string(need) + " " + unit + " in one piece (use more data or a smaller model.seq_len)";
}

}  // namespace

struct TrainCorpus::Storage {
  std::string text;                 // byte-level corpus
  std::vector<TokenShard> shards;   // mapped token shards
};

int64_t TrainCorpus::Piece::At(int64_t i) const { return TokenIdAt(data, width, i); }

Result<TrainCorpus> TrainCorpus::Load(const std::string& path, int seq_len, double val_fraction) {
  const fs::path root = path.empty() ? fs::path(kDefaultCorpusDir) : fs::path(path);
  std::error_code ec;
  if (!fs::exists(root, ec)) {
    return Status::NotFound("data path " + root.string() +
                            " does not exist; pass --data with a text file, a directory, or token shards "
                            "(pipewright tokenize)");
  }
  std::vector<fs::path> files;
  if (fs::is_directory(root, ec)) {
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      if (entry.is_regular_file(ec)) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(root);
  }
  std::vector<std::string> shards;
  for (const fs::path& f : files) {
    int32_t magic = 0;
    switch (KindOf(f, &magic)) {
      case DataFileKind::kShard: shards.push_back(f.string()); break;
      case DataFileKind::kForeignBinary: {
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%08x", static_cast<uint32_t>(magic));
        return Status::InvalidArgument(
            "data file " + f.string() + " looks like a token shard (.bin, at least a " +
            std::to_string(kShardHeaderBytes) + "-byte header) but its magic is " + std::to_string(magic) + " (" +
            hex + "), not a token shard's (" + std::to_string(kShardMagicU16) + " uint16, " +
            std::to_string(kShardMagicU32) + " uint32): write shards with `pipewright tokenize`, or rename a "
            "text file so it does not end in .bin");
      }
      case DataFileKind::kText: break;
    }
  }
  if (!shards.empty()) {
    Result<TrainCorpus> corpus = FromShards(shards, seq_len, val_fraction);
    if (!corpus.ok()) return corpus.status().WithContext("data " + root.string());
    return corpus;
  }
  std::string text;
  for (const fs::path& f : files) {
    PW_ASSIGN_OR_RETURN(std::string part, ReadFile(f));
    text += part;
  }
  Result<TrainCorpus> corpus = FromText(std::move(text), seq_len, val_fraction);
  if (!corpus.ok()) return corpus.status().WithContext("data " + root.string());
  return corpus;
}

Result<TrainCorpus> TrainCorpus::FromText(std::string text, int seq_len, double val_fraction) {
  if (seq_len < 1) return Status::InvalidArgument("seq_len must be >= 1");
  if (!(val_fraction >= 0 && val_fraction < 1)) {
    return Status::InvalidArgument("validation fraction must be in [0, 1), got " + std::to_string(val_fraction));
  }
  const size_t n = text.size();
  const size_t n_val = static_cast<size_t>(static_cast<double>(n) * val_fraction);
  const size_t need = static_cast<size_t>(seq_len) + 1;
  if (n - n_val < need || (val_fraction > 0 && n_val < need)) {
    return Status::FailedPrecondition(TooShort(static_cast<int64_t>(n), seq_len, "bytes"));
  }
  auto storage = std::make_shared<Storage>();
  storage->text = std::move(text);
  TrainCorpus corpus;
  const auto* bytes = reinterpret_cast<const uint8_t*>(storage->text.data());
  corpus.train_ = {Piece{bytes, 1, static_cast<int64_t>(n - n_val)}};
  if (n_val > 0) corpus.val_ = {Piece{bytes + (n - n_val), 1, static_cast<int64_t>(n_val)}};
  corpus.storage_ = std::move(storage);
  corpus.seq_len_ = seq_len;
  return corpus;
}

Result<TrainCorpus> TrainCorpus::FromShards(const std::vector<std::string>& paths, int seq_len, double val_fraction) {
  if (seq_len < 1) return Status::InvalidArgument("seq_len must be >= 1");
  auto storage = std::make_shared<Storage>();
  for (const std::string& p : paths) {
    PW_ASSIGN_OR_RETURN(TokenShard shard, TokenShard::Open(p));
    storage->shards.push_back(std::move(shard));
  }
  TrainCorpus corpus;
  corpus.sharded_ = true;
  corpus.seq_len_ = seq_len;
  const int64_t window = static_cast<int64_t>(seq_len) + 1;
  int64_t total = 0;
  for (const TokenShard& s : storage->shards) {
    Piece piece{s.body(), s.width(), s.size()};
    total += s.size();
    if (piece.count < window) continue;  // too short to hold one window
    const bool val = IsValidationShard(s.path());
    (val ? corpus.val_ : corpus.train_).push_back(piece);
  }
  if (corpus.val_.empty() && val_fraction > 0 && !corpus.train_.empty()) {
    // No validation shard: hold out the tail of the last training pieces.
    int64_t hold = static_cast<int64_t>(static_cast<double>(total) * val_fraction);
    while (hold > 0 && !corpus.train_.empty()) {
      Piece& last = corpus.train_.back();
      const int64_t take = std::min(hold, last.count);
      corpus.val_.insert(corpus.val_.begin(), Piece{last.data + (last.count - take) * last.width, last.width, take});
      last.count -= take;
      hold -= take;
      if (last.count < window) corpus.train_.pop_back();
    }
    std::erase_if(corpus.val_, [&](const Piece& p) { return p.count < window; });
  }
  if (corpus.train_.empty() || (val_fraction > 0 && corpus.val_.empty())) {
    int64_t val_total = 0;
    for (const TokenShard& s : storage->shards) {
      if (IsValidationShard(s.path())) val_total += s.size();
    }
    return Status::FailedPrecondition(
        TooShort(total, seq_len, "tokens") + "; the shards hold " + std::to_string(total - val_total) +
        " training and " + std::to_string(val_total) + " validation tokens (tokenize with a smaller --val-tokens, "
        "or more text)");
  }
  corpus.storage_ = std::move(storage);
  return corpus;
}

Status TrainCorpus::CheckVocabulary(int64_t vocab_size, const std::string& path) const {
  if (sharded_ || vocab_size == 256) return Status::Ok();
  return Status::InvalidArgument("data " + (path.empty() ? std::string(kDefaultCorpusDir) : path) +
                                 " is text, read as bytes (ids 0..255), but the model's vocabulary has " +
                                 std::to_string(vocab_size) + " ids; tokenize it with the model's own tokenizer "
                                 "first (pipewright tokenize --model DIR --out SHARDS) and pass --data SHARDS");
}

int64_t TrainCorpus::MaxToken() const {
  int64_t best = -1;
  for (const auto* split : {&train_, &val_}) {
    for (const Piece& p : *split) {
      for (int64_t i = 0; i < p.count; ++i) best = std::max(best, p.At(i));
    }
  }
  return best;
}

TokenBatch TrainCorpus::Draw(const std::vector<Piece>& split, uint64_t key, int rows) const {
  const int64_t t = seq_len_;
  // Valid window starts, all pieces together: [0, span).
  uint64_t span = 0;
  for (const Piece& p : split) span += static_cast<uint64_t>(p.count - t);
  at::Tensor window = at::empty({rows, t + 1}, at::kLong);
  int64_t* w = window.data_ptr<int64_t>();
  for (int r = 0; r < rows; ++r) {
    uint64_t start = SplitMix64(key ^ SplitMix64(static_cast<uint64_t>(r) + 1)) % span;
    const Piece* piece = split.data();
    while (start >= static_cast<uint64_t>(piece->count - t)) {
      start -= static_cast<uint64_t>(piece->count - t);
      ++piece;
    }
    for (int64_t j = 0; j <= t; ++j) w[r * (t + 1) + j] = piece->At(static_cast<int64_t>(start) + j);
  }
  return {window.narrow(1, 0, t).contiguous(), window.narrow(1, 1, t).contiguous()};
}

TokenBatch TrainCorpus::Sample(uint64_t seed, int64_t step, int64_t microbatch, int rows) const {
  uint64_t key = SplitMix64(seed);
  key = SplitMix64(key ^ static_cast<uint64_t>(step));
  key = SplitMix64(key ^ (static_cast<uint64_t>(microbatch) << 20));
  return Draw(train_, key, rows);
}

TokenBatch TrainCorpus::SampleValidation(uint64_t seed, int64_t index, int rows) const {
  PW_CHECK(!val_.empty(), "no validation split");
  uint64_t key = SplitMix64(seed ^ 0x5A5A5A5Aull);
  key = SplitMix64(key ^ static_cast<uint64_t>(index));
  return Draw(val_, key, rows);
}

}  // namespace pw
