// WeightPool: how a rank reaches the weights of the transformer blocks
// during inference. The decoder (infer/decoder.h) calls it for the two
// weight-bearing parts of every block (infer/layer_math.h); the pool decides
// where they run and which weights move.
//
//   replicate  every rank holds every block; both parts run locally
//   was        weight-as-a-service: block i is owned by rank i % N; a
//              non-owned block's packed weights are fetched from its owner
//              into a cache of `cache_slots` block slots, prefetched
//              `prefetch_depth` blocks ahead so transfers overlap compute
//   cas        compute-as-a-service: the rank sends the part's inputs to the
//              owner, which computes it and returns the result
//   shared     ranks on one host: block i is owned by rank i % N, which
//              puts it in shared memory at Create; every rank maps every
//              block read-only and runs both parts locally. No copies, no
//              cache, no serving thread (infer/shared_pool.h)
//   auto       WaS or CaS chosen per forward pass (BeginPass) from a cost
//              model calibrated at start-up: GEMM speed, link bandwidth and
//              latency (see ChooseMode). `pipewright infer` runs shared
//              instead when every rank can map the others' memory (one
//              host), since it moves nothing and reserves nothing
//
// Owners answer fetch and compute requests on a serving thread that uses
// the ProcessGroups' serving() group, so a rank serves while it computes.
// Ranks finish at different times: Finish() keeps serving until every rank
// has called it. (Implementation: infer/remote_pool.h is the client side,
// infer/serving_thread.h the owner side and the thread-safety analysis of
// Gloo it relies on, infer/pool_protocol.h the messages: requests travel on
// serving(), replies on data_parallel(); pooled modes need pp = 1.)
//
// Thread-safety: one thread (the rank's engine) calls the pool; the serving
// thread is internal. Failure: Status naming rank, peer and block (a peer
// that died or timed out is an IoError; the job should then exit).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/status.h"
#include "infer/model_weights.h"

namespace pw {

class ProcessGroups;

enum class PoolMode { kReplicate, kWas, kCas, kAuto, kShared };
const char* PoolModeName(PoolMode mode);                    // "replicate", "was", ...
Result<PoolMode> ParsePoolMode(const std::string& text);    // InvalidArgument lists the modes

struct PoolCalibration;

struct PoolOptions {
  PoolMode mode = PoolMode::kAuto;
  int cache_slots = 3;      // WaS/auto: block slots in the weight cache (>= 2)
  // WaS/auto: the layout of every rank's blocks (infer/model_weights.h
  // LinearLayout), one all ranks agreed on, so a fetched block is computed
  // as it arrives. Each rank's owned blocks must be in this layout.
  LinearLayout blocks_layout = LinearLayout::kPlain;
  // The format of every rank's blocks (the job's --weights): what a fetch
  // carries and a cache slot holds.
  WeightFormat blocks_format = WeightFormat::kFp32;
  int prefetch_depth = 2;   // WaS/auto: blocks fetched ahead (< cache_slots)
  // Auto: use these figures instead of measuring them at Create (tests and
  // reproducible runs). Null: calibrate (collective).
  const PoolCalibration* calibration = nullptr;
  // Auto: correct the calibrated model with each pass's measured waits
  // (infer/remote_pool.h). False: choose from the calibration alone
  // (deterministic choices, for tests).
  bool learn = true;
  // Auto: the KV capacity this rank would have without its weight cache
  // over the capacity it has (MemoryPlan: (kv_blocks + kv_swap_blocks) /
  // kv_blocks). Above 1, auto may give the cache up once it has committed
  // to CaS (see ShouldDropWeightCache); 1: it keeps it.
  double kv_gain_without_cache = 1.0;
  // Auto: no weight cache from the start, so CaS for every pass (the memory
  // plan's MemoryPlan::auto_without_cache: a cache does not fit).
  bool start_without_cache = false;
  // Auto: the KV blocks the plan held back for each commitment
  // (MemoryPlan::kv_swap_blocks when the weight cache is given up for CaS,
  // kv_was_swap_blocks when every rank has committed to WaS and the
  // serving reserve is given up); TakeReleasedKvBlocks hands them over. 0:
  // nothing to gain, so auto does not commit to that mode.
  int64_t kv_blocks_freed_by_cache = 0;
  int64_t kv_blocks_freed_by_serving = 0;
  // Auto: cache slots added, and the prefetch depth then used, when the
  // serving reserve is given up (MemoryPlan::was_swap_slots): the memory
  // that would have answered CaS requests holds more of the ring instead.
  // 0: neither changes.
  int slots_added_by_serving = 0;
  int prefetch_depth_after_serving = 0;
};

struct PoolStats {
  int64_t bytes_sent = 0, bytes_received = 0;  // by this rank's engine and serving thread
  int64_t fetches = 0;          // blocks fetched (WaS)
  int64_t remote_computes = 0;  // parts computed by an owner for this rank (CaS)
  int64_t served_fetches = 0, served_computes = 0;  // answered for other ranks
  int64_t passes_was = 0, passes_cas = 0, passes_local = 0;
  int64_t switches = 0;         // auto: consecutive passes with different modes
  double fetch_wait_s = 0;      // time the engine waited for weights
  double remote_wait_s = 0;     // time the engine waited for CaS results
  // Auto: what the passes taught the cost model (see "Auto" in
  // infer/remote_pool.h): the measured pass time, less its attention,
  // beyond ChooseMode's prediction, per mode (0 until the mode has taught a
  // pass; the job's first pass teaches nothing).
  double learned_extra_was_s = 0, learned_extra_cas_s = 0;
  // Auto: the pass after which the pool committed to CaS and freed its
  // weight cache for KV blocks (-1: never).
  int64_t cache_dropped_after_pass = -1;
  // Auto: the pass after which the pool committed to WaS (-1: never), and
  // the pass after which every rank had, so that the serving reserve became
  // KV blocks (-1: never).
  int64_t was_committed_after_pass = -1;
  int64_t serving_released_after_pass = -1;
};

// Start-up calibration (auto mode's cost model), measured, not assumed.
struct PoolCalibration {
  double gemm_flops = 0;        // this rank's float32 GEMM rate (FLOP/s)
  double bandwidth = 0;         // bytes/s between two ranks (serving group)
  double latency_s = 0;         // one small round trip / 2
};

// Predicted seconds of one forward pass over `rows` token rows in each mode
// for a rank that owns `owned` of `n_layers` blocks in a pool of `world`
// ranks, and the mode with the smallest (WaS or CaS). Pure; the crossover
// batch size is where they meet.
struct PassCost {
  double was_s = 0, cas_s = 0;
  PoolMode best = PoolMode::kWas;
};
PassCost ChooseMode(const PoolCalibration& calibration, const ModelConfig& config,
                    int64_t rows, int owned_blocks, int world = 2, int cache_slots = 0,
                    WeightFormat format = WeightFormat::kFp32);

// The remote blocks a WaS pass fetches when `cache_slots` slots cycle
// through a ring of `remote` blocks (slot = ring position mod slots) and
// every pass walks the ring in order: a slot that only one ring position
// uses keeps its block from pass to pass, the others are refetched. So
// remote - max(0, 2 * slots - remote) while slots < remote, 0 once every
// block has a slot of its own; `remote` when slots <= 0 (no cache known).
// Pure.
int64_t RingFetchesPerPass(int64_t remote, int cache_slots);
// The model (weight_pool.cc has the derivation): with P = BlockParamCount,
// B = BlockBytes(config, format) (4P in fp32, about 2P in bf16, P in int8),
// L blocks of which M = L - owned are remote, F = gemm_flops, W = bandwidth,
// l = latency_s, d = d_model, N = world and q = (N - 2) / 2 (the requests of
// other clients an owner serves, on average, before this one: each owner
// serves N - 1 clients),
//   compute = L * 2 * rows * P / F          (every block runs once per pass)
//   was_s   = max(compute, G * (B / W + l))  (prefetch hides the smaller;
//             replies are asynchronous, so a fetch queues behind no other;
//             G = RingFetchesPerPass(M, cache_slots): M without a cache
//             known, M / 2 with 3 slots for 4 remote blocks)
//   cas_s   = compute + 4 * rows * d * (5M + R) / W + (2 (M + R) + (M - R)) l
//             + M * q * 2 * rows * P / F
//             (R = runs of consecutive remote blocks, >= M / (N - 1); a run
//             costs one round trip per block plus one to start it: x [rows,d]
//             out and [rows,3d] back, then per block the attention output
//             [rows,d] out and the next qkv [rows,3d] (or, at the run's end,
//             x [rows,d]) back, the residual going owner to owner inside
//             the run; and each block's request waits behind q others)
// Ties go to WaS. was_s - cas_s falls as rows grow, so there is one crossover.

// Auto's per-pass rule: CaS when its predicted time plus what CaS passes
// taught (PoolStats::learned_extra_cas_s) beats WaS's likewise. Pure.
inline bool CasWinsWithCorrections(const PassCost& cost, double extra_was_s, double extra_cas_s) {
  return cost.cas_s + extra_cas_s < cost.was_s + extra_was_s;
}

// Auto's reason to commit to WaS at once, without the 8 WaS passes in a row
// it otherwise waits for (infer/remote_pool.h): CaS, with what the passes
// taught, is predicted to take at least kDecisiveMargin times WaS's pass
// time. No noise of one pass turns such a gap around, and until auto
// commits it runs with the smaller KV cache of a rank that still keeps its
// serving reserve. Pure.
constexpr double kDecisiveMargin = 2.0;
inline bool WasWinsDecisively(const PassCost& cost, double extra_was_s, double extra_cas_s) {
  return cost.cas_s + extra_cas_s >= kDecisiveMargin * (cost.was_s + extra_was_s);
}

// Auto's decision to give its weight cache up and run CaS from then on:
// true when CaS, with what the passes taught each mode (`extra_*_s`, see
// PoolStats), is predicted faster both at this pass's `rows` and at the
// rows the larger KV cache would allow (`rows * kv_gain`: WaS gains more
// from larger passes than CaS, so a CaS win at the current size alone is
// not enough). Pure.
bool ShouldDropWeightCache(const PoolCalibration& calibration, const ModelConfig& config,
                           int64_t rows, double kv_gain, int owned_blocks, int world,
                           double extra_was_s, double extra_cas_s, int cache_slots = 0,
                           WeightFormat format = WeightFormat::kFp32);

// The smallest row count for which ChooseMode prefers WaS (1 when WaS
// always wins, e.g. a rank that owns every block). Pure.
int64_t CrossoverRows(const PoolCalibration& calibration, const ModelConfig& config,
                      int owned_blocks, int world = 2, int cache_slots = 0,
                      WeightFormat format = WeightFormat::kFp32);

// The attention of block `layer` for a pass's rows: qkv [rows, 3d] ->
// attended [rows, d] (infer/decoder.h runs it over the KV cache).
using AttendFn = std::function<Result<at::Tensor>(int layer, const at::Tensor& qkv)>;

class WeightPool {
 public:
  virtual ~WeightPool() = default;

  // Called once before every forward pass over `rows` token rows: auto
  // picks the pass's mode here; WaS starts prefetching the first blocks.
  virtual Status BeginPass(int64_t rows) = 0;
  // The two weight-bearing parts of block `layer` (infer/layer_math.h),
  // computed wherever the pass's mode says. Blocks until the result is here.
  virtual Result<at::Tensor> PreAttention(int layer, const at::Tensor& x) = 0;
  virtual Result<at::Tensor> PostAttention(int layer, const at::Tensor& x,
                                           const at::Tensor& attended) = 0;
  virtual Status EndPass() = 0;
  // Runs every block of the model on x [rows, d] inside a pass: per block
  // PreAttention, `attend`, PostAttention; returns the last block's output.
  // The same results as those calls one by one (the default), but a pool may
  // move the work differently: CaS keeps the residual stream with the owners
  // through a run of remote blocks (one round trip per block; see
  // infer/pool_protocol.h). `attend` is called once per block, in order, on
  // this thread; its error ends the call (the pool must not be used again
  // in the pass). Blocks.
  virtual Result<at::Tensor> RunBlocks(at::Tensor x, const AttendFn& attend);

  // Bytes this rank holds for block weights: owned blocks + cache slots.
  virtual int64_t HeldBytes() const = 0;
  // Of HeldBytes, those in memory that other processes of the host map
  // (shared: this rank's blocks, as the pages of its region). A measure of
  // the process's own (anonymous) memory does not see them; the owner is
  // the one to charge them. Other pools: 0.
  virtual int64_t SharedMemoryBytes() const { return 0; }
  // Auto: the KV blocks the pool's commitment freed since the last call
  // (PoolOptions::kv_blocks_freed_by_cache once it committed to CaS and
  // freed its weight-cache slots, HeldBytes shrinking by their bytes;
  // kv_blocks_freed_by_serving once every rank committed to WaS); the
  // caller hands them to the KV cache (PagedKvCache::ReleaseHeldBack).
  // Each is returned once. Other pools: always 0.
  virtual int64_t TakeReleasedKvBlocks() { return 0; }
  virtual PoolStats stats() const = 0;
  virtual PoolMode mode() const = 0;
  virtual int n_layers() const = 0;  // the model's blocks
  // Collective: announces this rank is done and keeps serving until every
  // rank has announced; then stops the serving thread. Blocks.
  virtual Status Finish() = 0;
};

// Every rank's pool over the blocks it holds: `weights` must hold exactly
// the blocks OwnedBlocks(rank, world, n_layers) (all of them for
// replicate). Runs the calibration for auto and the exchange of regions
// for shared (collective: every rank calls Create with the same options).
// Shared copies the owned blocks, so the caller may free `weights`' blocks
// afterwards; the other modes keep using them. `groups` must have a
// serving group for was, cas and auto on more than one rank. Blocks.
Result<std::unique_ptr<WeightPool>> CreateWeightPool(const PoolOptions& options,
                                                     const ModelWeights& weights,
                                                     ProcessGroups* groups);

// Blocks that rank `rank` of `world` ranks owns: i with i % world == rank.
std::vector<int> OwnedBlocks(int rank, int world, int n_layers);

// Bytes CreateWeightPool's pool will hold for block weights on `rank`
// (HeldBytes before creating it, for the memory plan). Pure. Replicate (or
// one rank): every block; was/auto: the owned blocks plus min(cache_slots,
// remote blocks) slots (a slot that could never be used is not allocated);
// cas and shared: the owned blocks only.
int64_t PoolHeldBytes(const PoolOptions& options, const ModelConfig& config, int rank, int world);

}  // namespace pw
