#include "infer/memory_plan.h"

#include <algorithm>
#include <cstdio>

#include "core/units.h"
#include "infer/kv_cache.h"
#include "infer/model_weights.h"

namespace pw {
namespace {

// Embedding + head bytes (ModelWeights::SharedBytes of a loaded model).
// The embedding and the head as infer/layer_math.h PackHeadInPanels holds
// them in `format`: the head's matrix in the format (int8 with a scale per
// row), a tied embedding inside it, an untied one in bf16 unless fp32.
int64_t SharedWeightBytes(const ModelConfig& c, WeightFormat format) {
  const int64_t fp32 = 4 * (EmbeddingParameterCount(c) + HeadParameterCount(c));
  if (format == WeightFormat::kFp32) return fp32;
  const int64_t table = int64_t{c.vocab_size} * c.d_model;
  const int64_t head = table * WeightFormatBytes(format) + (format == WeightFormat::kInt8 ? 4 * c.vocab_size : 0);
  const int64_t embedding = c.tie_embeddings ? 0 : 2 * table;
  return fp32 - 4 * table * (c.tie_embeddings ? 1 : 2) + head + embedding;
}

}  // namespace

int64_t WorkspaceBytes(const ModelConfig& c, int64_t rows) {
  // Float32 intermediates of infer/decoder.cc's pass, live at the peak of
  // each phase of a block. Across the block: its input x and the residual h.
  const int64_t d = c.d_model, hidden = c.mlp_up_width(), t = c.seq_len;
  const int64_t across = 2 * rows * d;
  // Attention: qkv, its k/v copies written to the cache, the attended rows,
  // and for the sequence being attended its gathered K and V plus the
  // scores and softmax of at most `rows` queries over seq_len keys per head.
  // (Rope models also hold the rotated q|k|v: one more projection's rows.)
  const int64_t qkv = int64_t{c.qkv_width()} * (c.rope() ? 2 : 1);
  const int64_t attention = qkv * rows + 2 * rows * d + rows * d + 2 * t * d +
                            2 * int64_t{c.n_heads} * std::min(rows, t) * t;
  // MLP: LN2 output, the hidden layer before and after GELU, the output.
  const int64_t mlp = rows * d + 2 * rows * hidden + rows * d;
  // Head: the last rows' LayerNorm and logits (at most one per row).
  const int64_t head = rows * d + rows * int64_t{c.vocab_size};
  return 4 * (across + std::max({attention, mlp, head}));
}

int64_t ServingBytes(const ModelConfig& c, int64_t rows, int world) {
  if (world < 2) return 0;
  const int64_t d = c.d_model;
  const int64_t per_client = 4 * rows * (d + d + c.qkv_width());  // kept x, attended, qkv reply
  return (world - 1) * per_client + WorkspaceBytes(c, rows);
}

namespace {

// PlanMemory for the pool options as given (auto's choice made).
Result<MemoryPlan> PlanWithPool(const MemoryPlanInput& in) {
  PW_RETURN_IF_ERROR(ValidateModelConfig(in.config));
  if (in.world < 1 || in.rank < 0 || in.rank >= in.world) {
    return Status::InvalidArgument("memory plan: rank " + std::to_string(in.rank) +
                                   " is outside a world of " + std::to_string(in.world));
  }
  if (in.block_size < 1 || in.max_batch_tokens < 1) {
    return Status::InvalidArgument("memory plan: block size (" + std::to_string(in.block_size) +
                                   ") and max batch tokens (" +
                                   std::to_string(in.max_batch_tokens) + ") must be positive");
  }
  if (in.budget_bytes <= 0) {
    return Status::InvalidArgument("memory plan: the memory budget must be positive, got " +
                                   std::to_string(in.budget_bytes) + " bytes");
  }
  MemoryPlan plan;
  plan.budget = plan.budget_cap = in.budget_bytes;
  plan.block_size = in.block_size;
  plan.kv_dtype = in.kv_dtype;
  // The pool holds its owned blocks plus (WaS/auto) its cache slots; split
  // the two so the plan shows what the weight cache costs.
  const int64_t pool_bytes = PoolHeldBytes(in.pool, in.config, in.rank, in.world);
  const int64_t owned = in.pool.mode == PoolMode::kReplicate
                            ? in.config.n_layers
                            : static_cast<int64_t>(
                                  OwnedBlocks(in.rank, in.world, in.config.n_layers).size());
  const int64_t block = BlockBytes(in.config, in.pool.blocks_format);
  const int64_t owned_bytes = std::min(pool_bytes, owned * block);
  plan.weights = SharedWeightBytes(in.config, in.pool.blocks_format) + owned_bytes;
  plan.weight_cache = pool_bytes - owned_bytes;
  plan.cache_slots = static_cast<int>(plan.weight_cache / block);
  plan.workspace = WorkspaceBytes(in.config, in.max_batch_tokens);
  if (in.pool.mode == PoolMode::kCas || in.pool.mode == PoolMode::kAuto) {
    plan.serving = ServingBytes(in.config, in.max_batch_tokens, in.world);
  }

  const int64_t block_bytes = PagedKvCache::BlockBytes(in.config, in.block_size, in.kv_dtype);
  const int64_t one_sequence =
      ((in.config.seq_len + in.block_size - 1) / in.block_size) * block_bytes;
  const int64_t minimum = plan.held() + one_sequence;
  if (in.budget_bytes < minimum) {
    return Status::FailedPrecondition(
        "memory budget " + FormatBytes(static_cast<double>(in.budget_bytes)) + " (" + std::to_string(in.budget_bytes) +
        " B) on rank " + std::to_string(in.rank) + " cannot hold weights " + FormatBytes(static_cast<double>(plan.weights)) +
        " + weight cache " + FormatBytes(static_cast<double>(plan.weight_cache)) + " + workspace " + FormatBytes(static_cast<double>(plan.workspace)) +
        (plan.serving > 0 ? " + serving " + FormatBytes(static_cast<double>(plan.serving)) : std::string()) +
        " + the KV cache of one full-length sequence (" + std::to_string(in.config.seq_len) +
        " positions, " + FormatBytes(static_cast<double>(one_sequence)) + "); the minimum is " + FormatBytes(static_cast<double>(minimum)) + " (" +
        std::to_string(minimum) + " B): pass a larger --memory-budget" +
        (in.pool.mode == PoolMode::kReplicate
             ? std::string(", use --mode shared, was, cas or auto (each rank then holds 1/N of the blocks)")
             : std::string(", use more ranks")) +
        (in.pool.mode == PoolMode::kWas || in.pool.mode == PoolMode::kAuto
             ? std::string(", fewer weight-cache slots")
             : std::string()) +
        ", or lower --max-batch-tokens");
  }
  const int64_t left = in.budget_bytes - plan.held();
  plan.kv_blocks = left / block_bytes;
  plan.kv = plan.kv_blocks * block_bytes;
  plan.slack = left - plan.kv;
  plan.kv_capacity_tokens = plan.kv_blocks * in.block_size;
  const int64_t sequence_blocks = one_sequence / block_bytes;
  const int64_t wanted = std::max(in.kv_blocks_wanted, sequence_blocks);
  if (in.kv_blocks_wanted > 0 && plan.kv_blocks > wanted) {
    // The prompts cannot use more: the rest of the budget stays with the
    // machine, and neither of auto's swaps would add a usable block.
    plan.kv_blocks = wanted;
    plan.kv = wanted * block_bytes;
    plan.slack = 0;
    plan.kv_capacity_tokens = wanted * in.block_size;
    plan.budget = plan.held() + plan.kv;
    return plan;
  }
  if (in.pool.mode == PoolMode::kAuto && plan.weight_cache > 0) {  // auto with a cache
    plan.kv_swap_blocks = (left + plan.weight_cache) / block_bytes - plan.kv_blocks;
    plan.kv_was_swap_blocks = (left + plan.serving) / block_bytes - plan.kv_blocks;
  }
  return plan;
}

// Auto that got fewer cache slots than asked (the serving reserve took
// their room): once every rank commits to WaS the reserve is free, and it
// becomes what the WaS plan of the same budget holds — the slots asked for
// and that plan's KV blocks — where that plan has at least auto's KV
// blocks. With fewer slots than remote blocks every pass refetches more of
// them: at 2 slots a 4-block ring is fetched whole each pass, at 3 half of
// it (auto-net on 2 ranks at 30 MiB moved 1.4x fixed WaS's bytes per token
// that way, 1.06x with the slot back).
void GrowToWasPlanOnCommit(const MemoryPlanInput& in, MemoryPlan& plan) {
  if (plan.cache_slots >= in.pool.cache_slots || plan.kv_was_swap_blocks <= 0) return;
  MemoryPlanInput was = in;
  was.pool.mode = PoolMode::kWas;
  const Result<MemoryPlan> w = PlanWithPool(was);
  if (!w.ok() || w->cache_slots <= plan.cache_slots || w->kv_blocks < plan.kv_blocks) return;
  plan.was_swap_slots = w->cache_slots - plan.cache_slots;
  plan.kv_was_swap_blocks = w->kv_blocks - plan.kv_blocks;
}

}  // namespace

Result<MemoryPlan> PlanMemory(const MemoryPlanInput& in) {
  if (in.pool.mode == PoolMode::kAuto && in.world > 1 && !in.pool.start_without_cache) {
    // Auto with a cache (both modes open until it commits to one): the
    // slots asked for, or as many as fit down to 2 (WaS's least: one block
    // in use, one arriving); without one, as CaS, only when not even 2 fit.
    for (int slots = in.pool.cache_slots; slots >= 2; --slots) {
      MemoryPlanInput with = in;
      with.pool.cache_slots = slots;
      if (Result<MemoryPlan> plan = PlanWithPool(with); plan.ok()) {
        GrowToWasPlanOnCommit(in, *plan);
        return plan;
      }
    }
    MemoryPlanInput without = in;
    without.pool.start_without_cache = true;
    Result<MemoryPlan> plan = PlanWithPool(without);
    if (!plan.ok()) return plan;
    plan->auto_without_cache = true;
    return plan;
  }
  return PlanWithPool(in);
}

std::string DescribePlan(const MemoryPlan& p) {
  const std::string capped =
      p.budget < p.budget_cap ? " (of " + FormatBytes(static_cast<double>(p.budget_cap)) +
                                    ": the KV cache holds what the prompts can use)"
                              : std::string();
  return "budget " + FormatBytes(static_cast<double>(p.budget)) + capped + " = weights " + FormatBytes(static_cast<double>(p.weights)) + " + cache " +
         FormatBytes(static_cast<double>(p.weight_cache)) +
         (p.cache_slots > 0 ? " (" + std::to_string(p.cache_slots) + " slots)" : std::string()) + " + workspace " + FormatBytes(static_cast<double>(p.workspace)) +
         (p.serving > 0 ? " + serving " + FormatBytes(static_cast<double>(p.serving)) : std::string()) + " + kv " + FormatBytes(static_cast<double>(p.kv)) +
         " (" + std::to_string(p.kv_capacity_tokens) + " tokens in " +
         std::to_string(p.kv_blocks) + " blocks of " + std::to_string(p.block_size) +
         (p.kv_dtype == KvDtype::kFp32 ? std::string() : std::string(", ") + KvDtypeName(p.kv_dtype)) +
         ") + slack " + FormatBytes(static_cast<double>(p.slack)) +
         (p.kv_swap_blocks > 0 ? "; +" + std::to_string(p.kv_swap_blocks * p.block_size) +
                                     " kv tokens if auto commits to CaS (its weight cache given up)"
                               : std::string()) +
         (p.kv_was_swap_blocks > 0
              ? "; +" + std::to_string(p.kv_was_swap_blocks * p.block_size) +
                    (p.was_swap_slots > 0
                         ? " and +" + std::to_string(p.was_swap_slots) + " cache slots"
                         : std::string()) +
                    " if every rank's auto commits to WaS (the serving reserve given up)"
              : std::string()) +
         (p.auto_without_cache ? "; auto runs CaS without a weight cache (one does not fit)"
                               : std::string());
}

}  // namespace pw
