#include "text/token_shard.h"

#include <climits>
#include <cstring>

#include "os/atomic_file.h"

namespace pw {

Result<TokenShard> TokenShard::Open(const std::string& path) {
  PW_ASSIGN_OR_RETURN(MappedRegion region, MappedRegion::ReadOnlyFile(path));
  const auto bytes = static_cast<int64_t>(region.size());
  if (bytes < kShardHeaderBytes) {
    return Status::InvalidArgument(path + ": " + std::to_string(bytes) + " bytes, shorter than a token shard's " +
                                   std::to_string(kShardHeaderBytes) + "-byte header; is it a token shard "
                                   "(pipewright tokenize, llm.c)?");
  }
  int32_t header[3];
  std::memcpy(header, region.data(), sizeof(header));
  TokenShard shard;
  if (header[0] == kShardMagicU16 && header[1] == kShardVersionU16) {
    shard.width_ = 2;
  } else if (header[0] == kShardMagicU32 && header[1] == kShardVersionU32) {
    shard.width_ = 4;
  } else {
    return Status::InvalidArgument(path + ": header magic " + std::to_string(header[0]) + " version " +
                                   std::to_string(header[1]) + " is not a token shard's (" +
                                   std::to_string(kShardMagicU16) + "/1 for uint16, " +
                                   std::to_string(kShardMagicU32) + "/7 for uint32); write shards with "
                                   "`pipewright tokenize`");
  }
  const int64_t count = header[2];
  const int64_t body = bytes - kShardHeaderBytes;
  if (count < 0 || body != count * shard.width_) {
    return Status::InvalidArgument(path + ": the header says " + std::to_string(count) + " tokens (" +
                                   std::to_string(count * shard.width_) + " bytes) but " + std::to_string(body) +
                                   " bytes follow it; the file is truncated or damaged — tokenize it again");
  }
  shard.body_ = static_cast<const uint8_t*>(region.data()) + kShardHeaderBytes;
  shard.count_ = count;
  shard.region_ = std::move(region);
  shard.path_ = path;
  return shard;
}

Status TokenShardWriter::Append(std::span<const int32_t> ids) {
  const int64_t limit = width_ == 2 ? 65535 : INT32_MAX;
  for (int32_t id : ids) {
    if (id < 0 || id > limit) {
      return Status::InvalidArgument("token id " + std::to_string(id) + " does not fit a " +
                                     std::to_string(width_ * 8) + "-bit shard (" + path_ + ")");
    }
  }
  if (size() + static_cast<int64_t>(ids.size()) > INT32_MAX) {
    return Status::InvalidArgument(path_ + ": more than " + std::to_string(INT32_MAX) +
                                   " tokens exceed a shard's int32 count; use smaller shards (--shard-tokens)");
  }
  const size_t at = body_.size();
  body_.resize(at + ids.size() * static_cast<size_t>(width_));
  for (size_t i = 0; i < ids.size(); ++i) {
    char* out = body_.data() + at + i * static_cast<size_t>(width_);
    if (width_ == 2) {
      const auto v = static_cast<uint16_t>(ids[i]);
      std::memcpy(out, &v, 2);
    } else {
      const auto v = static_cast<uint32_t>(ids[i]);
      std::memcpy(out, &v, 4);
    }
  }
  return Status::Ok();
}

Status TokenShardWriter::Commit() {
  int32_t header[kShardHeaderInts] = {};
  header[0] = width_ == 2 ? kShardMagicU16 : kShardMagicU32;
  header[1] = width_ == 2 ? kShardVersionU16 : kShardVersionU32;
  header[2] = static_cast<int32_t>(size());
  AtomicFile file(path_, /*durable=*/true);
  PW_RETURN_IF_ERROR(file.Open());
  PW_RETURN_IF_ERROR(file.Write(std::string_view(reinterpret_cast<const char*>(header), sizeof(header))));
  PW_RETURN_IF_ERROR(file.Write(body_));
  return file.Commit();
}

}  // namespace pw
