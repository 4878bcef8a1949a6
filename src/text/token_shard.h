// Token shards: the on-disk layout llm.c writes and nanoGPT-style loaders
// read, so data tokenized by either tool trains here and ours trains there.
//
//   header: 256 little-endian int32 — [0] magic, [1] version, [2] token count
//   body:   `count` token ids, uint16 (magic 20240520, version 1: GPT-2-size
//           vocabularies) or uint32 (magic 20240801, version 7: Llama 3 / Qwen2)
//
// Readers map the file (os/mapped_region.h): a shard's pages are read only
// as training touches them. Writers put the whole shard under "<path>.tmp"
// and rename it into place (os/atomic_file.h), so a shard is either
// complete or absent — what `pipewright tokenize` relies on to resume.
//
// Thread-safety: a TokenShard is immutable (share it freely); a
// TokenShardWriter belongs to one thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "os/mapped_region.h"

namespace pw {

inline constexpr int kShardHeaderInts = 256;
inline constexpr int64_t kShardHeaderBytes = kShardHeaderInts * 4;
inline constexpr int32_t kShardMagicU16 = 20240520, kShardVersionU16 = 1;
inline constexpr int32_t kShardMagicU32 = 20240801, kShardVersionU32 = 7;

// The width (2 or 4 bytes) a vocabulary of `vocab_size` ids needs.
inline int ShardTokenWidth(int64_t vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

// Id i of `ids`, stored little-endian in `width` bytes each (1: bytes as
// the byte-level corpus holds them, 2 or 4: a shard's body). Never fails.
inline int64_t TokenIdAt(const uint8_t* ids, int width, int64_t i) {
  if (width == 1) return ids[i];
  if (width == 2) {
    uint16_t v;
    std::memcpy(&v, ids + 2 * i, 2);
    return v;
  }
  uint32_t v;
  std::memcpy(&v, ids + 4 * i, 4);
  return v;
}

class TokenShard {
 public:
  // Maps and checks `path`. NotFound / IoError naming it; InvalidArgument
  // when the magic/version is not a token shard's or the body is shorter or
  // longer than the header's count says (a truncated copy).
  static Result<TokenShard> Open(const std::string& path);

  int64_t size() const { return count_; }
  int width() const { return width_; }  // bytes per token: 2 or 4
  const std::string& path() const { return path_; }
  // The ids as stored: size() little-endian values of width() bytes.
  const uint8_t* body() const { return body_; }
  // Token i (< size()). Never fails.
  int64_t operator[](int64_t i) const { return TokenIdAt(body_, width_, i); }

 private:
  TokenShard() = default;
  MappedRegion region_;
  const uint8_t* body_ = nullptr;
  int64_t count_ = 0;
  int width_ = 2;
  std::string path_;
};

class TokenShardWriter {
 public:
  // `width`: 2 (uint16) or 4 (uint32). Nothing touches the disk until Commit.
  TokenShardWriter(std::string path, int width) : path_(std::move(path)), width_(width) {}

  // Adds ids, stored at the shard's width at once; each must fit the width
  // (the caller chose it from the vocabulary) and the shard's count an
  // int32. InvalidArgument naming the id, or the size, otherwise; nothing
  // of `ids` is added then.
  Status Append(std::span<const int32_t> ids);
  int64_t size() const { return static_cast<int64_t>(body_.size()) / width_; }

  // Writes header + body to "<path>.tmp", fsyncs and renames it to path.
  // Blocks on file I/O. IoError naming the file (disk full: nothing at path).
  Status Commit();

 private:
  std::string path_;
  int width_;
  std::string body_;  // the ids as the file holds them
};

}  // namespace pw
