#include "infer/shared_pool.h"

#include <ATen/ATen.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "comm/gather.h"
#include "comm/process_groups.h"
#include "infer/local_pool.h"
#include "os/shared_memory.h"

namespace pw {
namespace {

constexpr int64_t kHeaderBytes = 64;  // keeps the blocks 64-byte aligned
constexpr char kMagic[16] = "pipewright-pool";

struct RegionHeader {
  char magic[16];
  uint64_t token;
  int32_t rank;
  int32_t blocks;
  // The blocks' LinearLayout (oneDNN's is the owner's CPU layout: every
  // mapper is on the owner's host).
  int32_t layout;
  int32_t format;  // the blocks' WeightFormat
};
static_assert(sizeof(RegionHeader) <= kHeaderBytes);

// Every rank holds its blocks in the job's one format, which PackWeights
// gives the head too.
int64_t RegionBytes(const ModelConfig& config, WeightFormat format, int rank, int world) {
  return kHeaderBytes +
         static_cast<int64_t>(OwnedBlocks(rank, world, config.n_layers).size()) * BlockBytes(config, format);
}

uint64_t RandomToken() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

// This rank's region: header, then its blocks (packed one at a time, so
// loading never holds a second copy of them all) at kHeaderBytes; sealed.
Result<SharedRegion> PublishRegion(const ModelWeights& weights, int rank, int world, uint64_t token) {
  const std::vector<int> owned = OwnedBlocks(rank, world, weights.config.n_layers);
  PW_ASSIGN_OR_RETURN(SharedRegion region, SharedRegion::Create("pipewright-weights-rank" + std::to_string(rank),
                                                                RegionBytes(weights.config, weights.head_format,
                                                                            rank, world)));
  RegionHeader header{};
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.token = token;
  header.rank = rank;
  header.blocks = static_cast<int32_t>(owned.size());
  const LinearLayout layout = owned.empty() ? LinearLayout::kPlain : weights.blocks[owned.front()].layout;
  header.layout = static_cast<int32_t>(layout);
  header.format = static_cast<int32_t>(weights.head_format);
  for (int i : owned) {
    if (weights.blocks[i].layout != layout || weights.blocks[i].format != weights.head_format) {
      return Status::InvalidArgument("shared pool: rank " + std::to_string(rank) +
                                     "'s blocks are not all in one layout and format");
    }
  }
  PW_RETURN_IF_ERROR(region.Write(0, &header, sizeof header));
  int64_t offset = kHeaderBytes;
  for (int i : owned) {
    const at::Tensor flat = PackBlock(weights.blocks[i], weights.config);
    PW_RETURN_IF_ERROR(region.Write(offset, flat.data_ptr<uint8_t>(), flat.numel()));
    offset += flat.numel();
  }
  PW_RETURN_IF_ERROR(region.Seal());
  return region;
}

// Maps rank `peer`'s region as announced ("<address> <token>") and checks
// its header.
Result<SharedRegion> MapPeerRegion(const std::string& announced, int peer, int64_t bytes, int blocks) {
  std::istringstream in(announced);
  std::string address;
  uint64_t token = 0;
  in >> address >> token;
  Result<SharedRegion> opened = SharedRegion::Open(address, bytes);
  if (opened.status().code() == StatusCode::kInvalidArgument) {
    // The address names some other file here (wrong size, not sealed): the
    // same pid and descriptor on another host or in another PID namespace.
    return Status::NotFound("its address " + address + " names another file here (" +
                            opened.status().message() + "): not one host");
  }
  PW_ASSIGN_OR_RETURN(SharedRegion region, std::move(opened));
  RegionHeader header{};
  std::memcpy(&header, region.data(), sizeof header);
  if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0 || header.token != token || header.rank != peer ||
      header.blocks != blocks) {
    return Status::NotFound("its address " + address + " names another process's region here: not one host");
  }
  return region;
}

// Every rank's verdict on one step ("ok", or "<status code> <message>"):
// the first failure in rank order, naming its rank, with its code; Ok when
// none. The same on every rank.
Status AgreeOn(CommGroup& world, const Status& mine, const std::string& step) {
  PW_ASSIGN_OR_RETURN(std::vector<std::string> verdicts,
                      GatherStrings(world, mine.ok() ? std::string("ok")
                                                     : std::to_string(static_cast<int>(mine.code())) + " " +
                                                           mine.message()));
  for (size_t r = 0; r < verdicts.size(); ++r) {
    if (verdicts[r] == "ok") continue;
    const size_t space = verdicts[r].find(' ');
    const int code = std::atoi(verdicts[r].substr(0, space).c_str());
    return Status(static_cast<StatusCode>(code),
                  "rank " + std::to_string(r) + " " + step + ": " + verdicts[r].substr(space + 1));
  }
  return Status::Ok();
}

// The collective exchange: publishes this rank's region, maps everyone
// else's; result indexed by rank. Both steps end in an agreement, so every
// rank returns the same verdict, and a region's descriptor stays open until
// every rank has mapped it.
Result<std::vector<SharedRegion>> ExchangeRegions(CommGroup& world, const ModelWeights& weights) {
  const ModelConfig& config = weights.config;
  const int rank = world.rank(), size = world.size();
  const uint64_t token = RandomToken();
  Result<SharedRegion> mine = PublishRegion(weights, rank, size, token);
  PW_ASSIGN_OR_RETURN(std::vector<std::string> announced,
                      GatherStrings(world, mine.ok() ? mine->address() + " " + std::to_string(token) : "-"));
  PW_RETURN_IF_ERROR(AgreeOn(world, mine.status(), "could not publish its weights in shared memory"));

  std::vector<SharedRegion> regions(size);
  regions[rank] = std::move(*mine);
  Status mapped = Status::Ok();
  for (int peer = 0; peer < size && mapped.ok(); ++peer) {
    if (peer == rank) continue;
    const int blocks = static_cast<int>(OwnedBlocks(peer, size, config.n_layers).size());
    Result<SharedRegion> region =
        MapPeerRegion(announced[peer], peer, RegionBytes(config, weights.head_format, peer, size), blocks);
    if (region.ok()) {
      regions[peer] = std::move(*region);
    } else {
      mapped = Status(region.status().code(), "rank " + std::to_string(peer) + "'s region: " +
                                                  region.status().message());
    }
  }
  Status agreed = AgreeOn(world, mapped, "could not map another rank's weights");
  regions[rank].CloseDescriptor();  // everyone has mapped it (or given up)
  if (!agreed.ok()) {
    if (agreed.code() == StatusCode::kNotFound) {
      return Status::NotFound(agreed.message() + "; shared mode needs every rank on one host (and in one "
                              "PID namespace): use --mode was or cas");
    }
    return agreed;
  }
  return regions;
}

class SharedPool : public WeightPool {
 public:
  SharedPool(std::vector<SharedRegion> regions, const ModelConfig& config, int rank)
      : regions_(std::move(regions)) {
    const int world = static_cast<int>(regions_.size());
    table_.config = config;
    table_.blocks.resize(config.n_layers);
    for (int i = 0; i < config.n_layers; ++i) {
      const int owner = i % world, k = i / world;
      // Read-only pages: a write through these views is a crash, not a
      // silent change to every rank's weights.
      RegionHeader header{};
      std::memcpy(&header, regions_[owner].data(), sizeof header);
      const auto format = static_cast<WeightFormat>(header.format);
      const int64_t bytes = BlockBytes(config, format);
      auto* at = const_cast<uint8_t*>(regions_[owner].data() + kHeaderBytes + k * bytes);
      table_.blocks[i] = UnpackBlock(at::from_blob(at, {bytes}, at::kByte), config,
                                     static_cast<LinearLayout>(header.layout), format);
      if (owner == rank) own_bytes_ += bytes;
    }
    local_ = MakeLocalPool(table_, "shared");
  }

  Status BeginPass(int64_t rows) override { return local_->BeginPass(rows); }
  Result<at::Tensor> PreAttention(int layer, const at::Tensor& x) override {
    return local_->PreAttention(layer, x);
  }
  Result<at::Tensor> PostAttention(int layer, const at::Tensor& x, const at::Tensor& attended) override {
    return local_->PostAttention(layer, x, attended);
  }
  Status EndPass() override { return local_->EndPass(); }
  int64_t HeldBytes() const override { return own_bytes_; }
  int64_t SharedMemoryBytes() const override { return own_bytes_; }
  PoolStats stats() const override { return local_->stats(); }
  PoolMode mode() const override { return PoolMode::kShared; }
  int n_layers() const override { return table_.config.n_layers; }
  // Nothing to serve: a mapped region outlives its owner's exit.
  Status Finish() override { return Status::Ok(); }

 private:
  std::vector<SharedRegion> regions_;  // by rank; the views below point into them
  ModelWeights table_;                 // every block, as views; no embedding or head
  std::unique_ptr<WeightPool> local_;  // runs the parts over table_
  int64_t own_bytes_ = 0;
};

}  // namespace

Result<std::unique_ptr<WeightPool>> MakeSharedPool(const ModelWeights& weights, ProcessGroups* groups) {
  CommGroup& world = groups->world();
  PW_ASSIGN_OR_RETURN(std::vector<SharedRegion> regions, ExchangeRegions(world, weights));
  return std::unique_ptr<WeightPool>(new SharedPool(std::move(regions), weights.config, world.rank()));
}

Result<bool> RanksShareMemory(CommGroup& world) {
  ModelWeights none;
  none.config.n_layers = 0;  // regions of a header only
  Result<std::vector<SharedRegion>> regions = ExchangeRegions(world, none);
  if (regions.ok()) return true;
  if (regions.status().code() == StatusCode::kNotFound) return false;
  return regions.status();
}

}  // namespace pw
