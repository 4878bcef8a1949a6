#include "runtime/data.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace pw {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

Result<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError("cannot read data file " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<ByteCorpus> ByteCorpus::Load(const std::string& path, int seq_len, double val_fraction) {
  namespace fs = std::filesystem;
  const fs::path root = path.empty() ? fs::path(kDefaultCorpusDir) : fs::path(path);
  std::error_code ec;
  if (!fs::exists(root, ec)) {
    return Status::NotFound("data path " + root.string() +
                            " does not exist; pass --data FILE with a text file");
  }
  std::string text;
  if (fs::is_directory(root, ec)) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      if (entry.is_regular_file(ec)) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      PW_ASSIGN_OR_RETURN(std::string part, ReadFile(f));
      text += part;
    }
  } else {
    PW_ASSIGN_OR_RETURN(text, ReadFile(root));
  }
  Result<ByteCorpus> corpus = FromText(std::move(text), seq_len, val_fraction);
  if (!corpus.ok()) return corpus.status().WithContext("data " + root.string());
  return corpus;
}

Result<ByteCorpus> ByteCorpus::FromText(std::string text, int seq_len, double val_fraction) {
  if (seq_len < 1) return Status::InvalidArgument("seq_len must be >= 1");
  if (!(val_fraction >= 0 && val_fraction < 1)) {
    return Status::InvalidArgument("validation fraction must be in [0, 1), got " +
                                   std::to_string(val_fraction));
  }
  const size_t n = text.size();
  const size_t n_val = static_cast<size_t>(static_cast<double>(n) * val_fraction);
  const size_t need = static_cast<size_t>(seq_len) + 1;
  if (n - n_val < need || (val_fraction > 0 && n_val < need)) {
    return Status::FailedPrecondition(
        "the text has " + std::to_string(n) + " bytes; each split needs at least seq_len + 1 = " +
        std::to_string(need) + " bytes (use a longer text or a smaller model.seq_len)");
  }
  std::vector<uint8_t> train(text.begin(), text.begin() + static_cast<long>(n - n_val));
  std::vector<uint8_t> val(text.begin() + static_cast<long>(n - n_val), text.end());
  return ByteCorpus(std::move(train), std::move(val), seq_len);
}

TokenBatch ByteCorpus::Draw(const std::vector<uint8_t>& bytes, uint64_t key, int rows) const {
  const int64_t t = seq_len_;
  const uint64_t span = bytes.size() - static_cast<size_t>(t);  // valid starts: [0, span)
  at::Tensor window = at::empty({rows, t + 1}, at::kLong);
  int64_t* w = window.data_ptr<int64_t>();
  for (int r = 0; r < rows; ++r) {
    const uint64_t start = SplitMix64(key ^ SplitMix64(static_cast<uint64_t>(r) + 1)) % span;
    for (int64_t j = 0; j <= t; ++j) w[r * (t + 1) + j] = bytes[start + static_cast<size_t>(j)];
  }
  return {window.narrow(1, 0, t).contiguous(), window.narrow(1, 1, t).contiguous()};
}

TokenBatch ByteCorpus::Sample(uint64_t seed, int64_t step, int64_t microbatch, int rows) const {
  uint64_t key = SplitMix64(seed);
  key = SplitMix64(key ^ static_cast<uint64_t>(step));
  key = SplitMix64(key ^ (static_cast<uint64_t>(microbatch) << 20));
  return Draw(train_, key, rows);
}

TokenBatch ByteCorpus::SampleValidation(uint64_t seed, int64_t index, int rows) const {
  PW_CHECK(!val_.empty(), "no validation split");
  uint64_t key = SplitMix64(seed ^ 0x5A5A5A5Aull);
  key = SplitMix64(key ^ static_cast<uint64_t>(index));
  return Draw(val_, key, rows);
}

}  // namespace pw
