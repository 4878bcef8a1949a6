// The weight pool's pure parts (modes, ownership, memory, the cost model)
// and CreateWeightPool, which picks the implementation: local_pool.h for
// replicate and single-rank worlds, shared_pool.h for shared, remote_pool.h
// for was/cas/auto.
#include "infer/weight_pool.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "comm/process_groups.h"
#include "infer/calibration.h"
#include "infer/local_pool.h"
#include "infer/remote_pool.h"
#include "infer/shared_pool.h"

namespace pw {

const char* PoolModeName(PoolMode mode) {
  switch (mode) {
    case PoolMode::kReplicate: return "replicate";
    case PoolMode::kWas: return "was";
    case PoolMode::kCas: return "cas";
    case PoolMode::kAuto: return "auto";
    case PoolMode::kShared: return "shared";
  }
  return "unknown";
}

Result<PoolMode> ParsePoolMode(const std::string& text) {
  for (PoolMode mode : {PoolMode::kReplicate, PoolMode::kWas, PoolMode::kCas, PoolMode::kAuto,
                        PoolMode::kShared}) {
    if (text == PoolModeName(mode)) return mode;
  }
  return Status::InvalidArgument("unknown weight pool mode '" + text +
                                 "'; the modes are replicate, was, cas, shared and auto");
}

std::vector<int> OwnedBlocks(int rank, int world, int n_layers) {
  std::vector<int> blocks;
  if (world < 1 || rank < 0 || rank >= world) return blocks;
  for (int i = rank; i < n_layers; i += world) blocks.push_back(i);
  return blocks;
}

int64_t PoolHeldBytes(const PoolOptions& options, const ModelConfig& config, int rank,
                      int world) {
  const int64_t block = BlockBytes(config, options.blocks_format);
  if (options.mode == PoolMode::kReplicate || world <= 1) return config.n_layers * block;
  const int64_t owned = static_cast<int64_t>(OwnedBlocks(rank, world, config.n_layers).size());
  if (options.mode == PoolMode::kCas || options.mode == PoolMode::kShared ||
      (options.mode == PoolMode::kAuto && options.start_without_cache)) {
    return owned * block;
  }
  const int64_t remote = config.n_layers - owned;
  return (owned + std::min<int64_t>(options.cache_slots, remote)) * block;
}

int64_t RingFetchesPerPass(int64_t remote, int cache_slots) {
  if (remote <= 0) return 0;
  if (cache_slots <= 0) return remote;
  if (cache_slots >= remote) return 0;
  return remote - std::max<int64_t>(0, 2 * int64_t{cache_slots} - remote);
}

// Why this model: a pass runs every block's two parts once, so the GEMM
// work, 2 * rows * P FLOPs per block (the weights dominate; LayerNorm, GELU
// and biases are O(rows * d)), is the same in both modes; only where it runs
// and what crosses the link differ. WaS moves each remote block's 4P bytes,
// one request (one latency) per block, and the prefetch overlaps those
// transfers with compute, so the pass takes the longer of the two. CaS moves
// activations instead, but each round trip waits (the next block needs the
// result), so communication adds to compute. Attention is local in both
// modes and cancels out. Contention: every owner serves N - 1 clients from
// one serving thread, so a CaS request finds on average q = (N - 2) / 2
// others ahead of it (the clients run the same passes at about the same
// time) and waits for their compute of the block. A WaS fetch does not
// queue so: the thread hands the block to the transport and takes the next
// request at once (the replies are asynchronous).
PassCost ChooseMode(const PoolCalibration& calibration, const ModelConfig& config,
                    int64_t rows, int owned_blocks, int world, int cache_slots, WeightFormat format) {
  const double params = static_cast<double>(BlockParamCount(config));
  const double block_bytes = static_cast<double>(BlockBytes(config, format));
  const double layers = config.n_layers;
  const double remote = std::max(0.0, layers - std::max(0, owned_blocks));
  const double flops = std::max(calibration.gemm_flops, 1.0);
  const double bandwidth = std::max(calibration.bandwidth, 1.0);
  const double latency = std::max(calibration.latency_s, 0.0);
  const double r = static_cast<double>(std::max<int64_t>(rows, 0));
  const double n = std::max(2, world);
  const double queue = (n - 2) / 2;
  const double compute = layers * 2.0 * r * params / flops;
  PassCost cost;
  const double fetched =
      static_cast<double>(RingFetchesPerPass(static_cast<int64_t>(remote), cache_slots));
  cost.was_s = std::max(compute, fetched * (block_bytes / bandwidth + latency));
  // Runs of remote blocks: at most N - 1 long (the rank owns every N-th
  // block), and about one per owned block.
  const double runs =
      remote == 0 ? 0
                  : std::clamp(double(std::max(0, owned_blocks)), std::ceil(remote / (n - 1)),
                               remote);
  // Per remote block x, the attended rows and the q|k|v reply; per run its input.
  const double activation_bytes =
      4.0 * r * ((2.0 * config.d_model + config.qkv_width()) * remote + config.d_model * runs);
  const double latencies = 2 * (remote + runs) + (remote - runs);
  cost.cas_s = compute + activation_bytes / bandwidth + latencies * latency +
               remote * queue * 2.0 * r * params / flops;
  cost.best = cost.cas_s < cost.was_s ? PoolMode::kCas : PoolMode::kWas;
  return cost;
}

bool ShouldDropWeightCache(const PoolCalibration& calibration, const ModelConfig& config,
                           int64_t rows, double kv_gain, int owned_blocks, int world,
                           double extra_was_s, double extra_cas_s, int cache_slots, WeightFormat format) {
  if (kv_gain <= 1.0 || rows <= 0) return false;
  auto cas_wins = [&](int64_t r) {
    return CasWinsWithCorrections(
        ChooseMode(calibration, config, r, owned_blocks, world, cache_slots, format), extra_was_s,
        extra_cas_s);
  };
  const auto grown = static_cast<int64_t>(std::ceil(static_cast<double>(rows) * kv_gain));
  return cas_wins(rows) && cas_wins(grown);
}

int64_t CrossoverRows(const PoolCalibration& calibration, const ModelConfig& config,
                      int owned_blocks, int world, int cache_slots, WeightFormat format) {
  auto was_wins = [&](int64_t rows) {
    return ChooseMode(calibration, config, rows, owned_blocks, world, cache_slots, format).best ==
           PoolMode::kWas;
  };
  int64_t high = 1;
  while (!was_wins(high)) {
    if (high >= (int64_t{1} << 40)) return high;  // CaS everywhere that matters
    high *= 2;
  }
  int64_t low = high / 2;  // CaS wins at low (or low == 0)
  if (low == 0) return 1;
  while (high - low > 1) {
    int64_t mid = low + (high - low) / 2;
    (was_wins(mid) ? high : low) = mid;
  }
  return high;
}

Result<at::Tensor> WeightPool::RunBlocks(at::Tensor x, const AttendFn& attend) {
  for (int layer = 0; layer < n_layers(); ++layer) {
    at::Tensor attended;
    {
      PW_ASSIGN_OR_RETURN(at::Tensor qkv, PreAttention(layer, x));
      PW_ASSIGN_OR_RETURN(attended, attend(layer, qkv));
    }  // qkv is freed before the MLP, whose peak is the pass's (memory_plan.cc WorkspaceBytes)
    PW_ASSIGN_OR_RETURN(x, PostAttention(layer, x, attended));
  }
  return x;
}

namespace {

Status CheckOptions(const PoolOptions& options) {
  if (options.mode == PoolMode::kWas || options.mode == PoolMode::kAuto) {
    if (options.cache_slots < 2) {
      return Status::InvalidArgument("weight pool: cache_slots = " +
                                     std::to_string(options.cache_slots) +
                                     "; WaS needs at least 2 slots (one in use, one arriving)");
    }
    if (options.prefetch_depth < 0 || options.prefetch_depth >= options.cache_slots) {
      return Status::InvalidArgument(
          "weight pool: prefetch_depth = " + std::to_string(options.prefetch_depth) +
          " must be in [0, cache_slots) = [0, " + std::to_string(options.cache_slots) +
          "): a prefetch may not overwrite the block in use");
    }
    const int after = options.cache_slots + options.slots_added_by_serving;
    if (options.slots_added_by_serving < 0 || options.prefetch_depth_after_serving < 0 ||
        options.prefetch_depth_after_serving >= after) {
      return Status::InvalidArgument(
          "weight pool: slots_added_by_serving = " + std::to_string(options.slots_added_by_serving) +
          " and prefetch_depth_after_serving = " +
          std::to_string(options.prefetch_depth_after_serving) +
          " must be >= 0, the depth below the slots then held (" + std::to_string(after) + ")");
    }
  }
  return Status::Ok();
}

Status CheckBlocks(const ModelWeights& weights, const std::vector<int>& expected, int rank,
                   const char* mode) {
  const int n = weights.config.n_layers;
  if (static_cast<int>(weights.blocks.size()) != n) {
    return Status::InvalidArgument("weight pool: the weights have " +
                                   std::to_string(weights.blocks.size()) +
                                   " block entries but the config has " + std::to_string(n));
  }
  std::vector<bool> want(n, false);
  for (int i : expected) want[i] = true;
  for (int i = 0; i < n; ++i) {
    if (weights.blocks[i].defined() != want[i]) {
      return Status::InvalidArgument(
          std::string("weight pool (") + mode + ") on rank " + std::to_string(rank) + ": block " +
          std::to_string(i) + (want[i] ? " is missing" : " is held but not owned") +
          "; load exactly OwnedBlocks(rank, world, n_layers) (every block for replicate)");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<WeightPool>> CreateWeightPool(const PoolOptions& options,
                                                     const ModelWeights& weights,
                                                     ProcessGroups* groups) {
  PW_RETURN_IF_ERROR(CheckOptions(options));
  const ModelConfig& config = weights.config;
  const int world = groups ? groups->world().size() : 1;
  const int rank = groups ? groups->rank() : 0;
  if (options.mode == PoolMode::kReplicate || world == 1) {
    std::vector<int> all = OwnedBlocks(0, 1, config.n_layers);
    PW_RETURN_IF_ERROR(CheckBlocks(weights, all, rank, PoolModeName(options.mode)));
    return MakeLocalPool(weights);
  }
  if (options.mode == PoolMode::kShared) {
    PW_RETURN_IF_ERROR(CheckBlocks(weights, OwnedBlocks(rank, world, config.n_layers), rank,
                                   PoolModeName(options.mode)));
    return MakeSharedPool(weights, groups);
  }
  if (!groups->serving()) {
    return Status::FailedPrecondition(
        std::string("weight pool mode '") + PoolModeName(options.mode) +
        "' needs a serving group: create ProcessGroups with serving_group = true");
  }
  if (groups->data_parallel().size() != world || groups->serving()->size() != world) {
    return Status::InvalidArgument(
        std::string("weight pool mode '") + PoolModeName(options.mode) +
        "' pools over every rank: create ProcessGroups with pp = 1 (data-parallel size " +
        std::to_string(groups->data_parallel().size()) + ", world " + std::to_string(world) + ")");
  }
  PW_RETURN_IF_ERROR(CheckBlocks(weights, OwnedBlocks(rank, world, config.n_layers), rank,
                                 PoolModeName(options.mode)));
  // Blocks that travel (WaS, auto) must be in the layout every rank reads.
  const bool sends_blocks = options.mode == PoolMode::kWas || options.mode == PoolMode::kAuto;
  for (int i : OwnedBlocks(rank, world, config.n_layers)) {
    const BlockWeights& b = weights.blocks[i];
    if (sends_blocks && (b.layout != options.blocks_layout || b.format != options.blocks_format)) {
      return Status::InvalidArgument(
          "weight pool: rank " + std::to_string(rank) + "'s block " + std::to_string(i) + " is " +
          LinearLayoutName(b.layout) + " " + WeightFormatName(b.format) + " but the pool sends blocks " +
          LinearLayoutName(options.blocks_layout) + " " + WeightFormatName(options.blocks_format) +
          " (PoolOptions::blocks_layout, blocks_format)");
    }
  }
  PoolCalibration calibration;
  if (options.mode == PoolMode::kAuto && options.calibration) {
    calibration = *options.calibration;
  } else if (options.mode == PoolMode::kAuto) {
    PW_ASSIGN_OR_RETURN(calibration, Calibrate(config, groups, options.blocks_layout, options.blocks_format));
  }
  return MakeRemotePool(options, weights, groups, calibration);
}

}  // namespace pw
