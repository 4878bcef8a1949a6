// MemoryPlan: where a rank's memory budget goes, to the byte. The budget
// pays for, in order: the weights this rank holds (embedding, head, owned
// blocks; in mode shared the owned blocks are this rank's shared region,
// which the other ranks map instead of holding copies), the weight cache
// (WaS/auto slots), the workspace (activations of the largest forward
// pass: max_batch_tokens rows), the serving side (CaS and auto: what the
// owner holds for the other ranks' requests, see ServingBytes), and what
// remains is KV cache, in whole blocks; the remainder smaller than one
// block is reported as slack. Invariant (tested): weights + cache +
// workspace + serving + kv + slack == budget.
//
// The budget is a cap, not a target: when the prompts can use fewer KV
// blocks than the rest of the budget holds (MemoryPlanInput::
// kv_blocks_wanted), the KV cache gets those (at least one full-length
// sequence's), and the plan's budget shrinks to what it holds; budget_cap
// keeps the budget given.
//
// Auto holds both a weight cache (for WaS passes) and the serving reserve
// (for the CaS requests of others) until it commits to one mode, so it
// plans what each is worth in KV blocks: once it has measured both modes
// and commits to CaS for good, it frees the cache and the KV cache grows
// by kv_swap_blocks (the blocks a CaS plan of the same budget has beyond
// auto's); once every rank has committed to WaS, no CaS request can come,
// and the KV cache grows by kv_was_swap_blocks (the serving reserve's
// blocks: a WaS plan's capacity) and, when auto has fewer cache slots than
// asked, the cache by was_swap_slots (a WaS plan's slots; the KV growth is
// then what is left). So a run that settles on either mode ends with that
// mode's plan. Swapped blocks never coexist with what
// they replace: weights + cache + workspace + serving + kv and the same
// less the cache or the serving reserve plus its swap all fit the budget.
// Auto plans with as many cache slots as fit, from those asked for down to
// 2, and starts without a weight cache (as CaS, auto_without_cache) only
// when not even 2 fit.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "infer/kv_cache.h"
#include "infer/weight_pool.h"
#include "model/model_config.h"

namespace pw {

struct MemoryPlanInput {
  ModelConfig config;
  PoolOptions pool;
  int rank = 0, world = 1;
  int64_t budget_bytes = 0;
  int block_size = 16;            // KV block size in token positions
  KvDtype kv_dtype = KvDtype::kFp32;  // element type of the KV cache
  int64_t max_batch_tokens = 256; // rows of the largest forward pass
  // KV blocks the job's prompts can use at most (KvBlocksWanted); 0: no cap.
  int64_t kv_blocks_wanted = 0;
};

struct MemoryPlan {
  int64_t budget = 0;        // what the plan holds: the budget given, or less when the KV is capped
  int64_t budget_cap = 0;    // the budget given
  int64_t weights = 0;       // embedding + head + owned blocks
  int64_t weight_cache = 0;  // WaS/auto cache slots
  int64_t workspace = 0;     // activations of a max_batch_tokens pass
  int64_t serving = 0;       // CaS/auto: the owner's buffers and compute for other ranks
  int64_t kv = 0;            // num_blocks * block bytes
  int64_t slack = 0;         // < one KV block
  int64_t kv_blocks = 0;
  int block_size = 0;
  KvDtype kv_dtype = KvDtype::kFp32;
  int64_t kv_capacity_tokens = 0;  // kv_blocks * block_size
  int64_t kv_swap_blocks = 0;      // auto: KV blocks that replace the weight cache when auto drops it
  int64_t kv_was_swap_blocks = 0;  // auto: KV blocks that replace the serving reserve when all commit to WaS
  int was_swap_slots = 0;          // auto: cache slots the serving reserve also becomes then (so that
                                   // auto committed to WaS holds WaS's own plan; see PlanMemory)
  bool auto_without_cache = false; // auto: planned as CaS from the start (no weight cache)
  int cache_slots = 0;             // weight_cache in blocks: the slots asked for, at most the remote
                                   // blocks (auto: fewer when those do not fit)
  int64_t held() const { return weights + weight_cache + workspace + serving; }
};

// Workspace bytes of one forward pass over `rows` rows (the largest live
// intermediates of a block: qkv, attention scores for a full-length
// sequence, MLP hidden). Pure.
int64_t WorkspaceBytes(const ModelConfig& config, int64_t rows);

// What an owner holds to answer CaS requests of `world` - 1 clients whose
// passes have up to `rows` rows (infer/serving_thread.h): per client the
// kept input x of its last PreAttention, the received attention output and
// the reply in flight (qkv, 3 d wide) — a client waits for each reply
// before its next request — plus the workspace of one block computed on
// the serving thread (which runs beside the engine's own pass). 0 for one
// rank. Pure.
int64_t ServingBytes(const ModelConfig& config, int64_t rows, int world);

// The plan, or FailedPrecondition when the budget cannot hold the weights,
// cache and workspace plus the KV blocks of one full-length sequence
// (config.seq_len positions); the message gives the minimum budget needed
// and how to get there (a larger --memory-budget, or mode was/cas).
Result<MemoryPlan> PlanMemory(const MemoryPlanInput& input);

// One line for logs: "budget 64.0 MiB = weights 20.1 MiB + cache ... + kv 30.0 MiB (1920 tokens) + slack 12 B".
std::string DescribePlan(const MemoryPlan& plan);

}  // namespace pw
