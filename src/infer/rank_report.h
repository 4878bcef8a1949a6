// InferRankReport: what one rank of `pipewright infer` reports when it is
// done — its requests and tokens, the engine's and the weight pool's
// counters, its memory plan and what it measured — declared once
// (ReportFieldsOf, infer/report_fields.h) for the JSON a rank sends world
// rank 0, the reader there, and the job summary's combination across ranks
// (infer/job_summary.h). The JSON keys are those of the per-rank objects in
// the job summary's "rank_summaries".
//
// Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "infer/memory_plan.h"
#include "infer/report_fields.h"
#include "infer/reusing_allocator.h"
#include "infer/weight_pool.h"

namespace pw {

// The engine's decode-only passes (EngineStats' decode_* fields).
struct DecodeReport {
  int64_t passes = 0, rows = 0;
  double flops = 0, seconds = 0, attention_seconds = 0;
};

// The process's memory (os/memory.h ResidentMemory) measured around
// generation; see InferSession::Finish for what each figure counts.
struct MeasuredMemoryReport {
  int64_t start_resident_bytes = 0;
  int64_t load_peak_bytes = 0;
  int64_t peak_resident_bytes = 0;
  int64_t resident_growth_bytes = 0;
  int64_t file_backed_growth_bytes = 0;
  int64_t measured_bytes = 0;  // what the rank charges itself: its own peak above the start
  int64_t planned_bytes = 0;   // the plan's budget - slack
  double measured_over_planned = 0;
};

struct InferRankReport {
  int rank = 0, world = 0;
  std::string mode;   // the pool's mode (PoolModeName)
  std::string split;  // "queue" or "round-robin"
  int64_t requests = 0, finished = 0, errors = 0, skipped_done = 0;
  int64_t generated_tokens = 0, prompt_tokens = 0, steps = 0;
  int peak_sequences = 0;
  int64_t preemptions = 0, recomputed_tokens = 0;
  int64_t prefill_tokens = 0, prefix_hit_tokens = 0;  // EngineStats'
  int64_t prefix_evictions = 0;                       // cached blocks taken back
  double engine_seconds = 0, model_flops = 0;
  DecodeReport decode;
  double run_seconds = 0, load_seconds = 0, rank_seconds = 0, tokens_per_s = 0;
  int64_t kv_capacity_tokens = 0, kv_bytes = 0, held_weight_bytes = 0;
  std::string weights_layout;  // "panels", "prepacked" or "plain"
  std::string weights_format;  // "fp32", "bf16" or "int8"
  std::string kernel_level;    // pipewright's kernels: "avx512", "avx2" or "scalar"
  bool accounting_exact = false;
  int64_t bytes_moved = 0;  // received by this rank: every byte moved is received once
  double bytes_moved_per_token = 0;
  MemoryPlan plan;
  ReusingAllocatorStats allocator;  // the reported fields only; the others stay 0 when read
  std::optional<MeasuredMemoryReport> memory;  // absent when /proc could not be read
  PoolStats pool;
  // Present when the cost model was calibrated (auto, --predict-crossover).
  std::optional<PoolCalibration> calibration;
  std::optional<int64_t> predicted_crossover_rows;
};

template <>
struct ReportFieldsOf<DecodeReport> {
  template <class V>
  static void Visit(V&& v) {
    using R = DecodeReport;
    v(&R::passes, ReportField{"passes"});
    v(&R::rows, ReportField{"rows"});
    v(&R::flops, ReportField{"flops"});
    v(&R::seconds, ReportField{"seconds"});
    v(&R::attention_seconds, ReportField{"attention_seconds"});
  }
};

template <>
struct ReportFieldsOf<MeasuredMemoryReport> {
  template <class V>
  static void Visit(V&& v) {
    using R = MeasuredMemoryReport;
    v(&R::start_resident_bytes, ReportField{"start_resident_bytes"});
    v(&R::load_peak_bytes, ReportField{"load_peak_bytes", kCombineMax});
    v(&R::peak_resident_bytes, ReportField{"peak_resident_bytes"});
    v(&R::resident_growth_bytes, ReportField{"resident_growth_bytes"});
    v(&R::file_backed_growth_bytes, ReportField{"file_backed_growth_bytes"});
    v(&R::measured_bytes, ReportField{"measured_bytes"});
    v(&R::planned_bytes, ReportField{"planned_bytes"});
    v(&R::measured_over_planned, ReportField{"measured_over_planned"});
  }
};

template <>
struct ReportFieldsOf<MemoryPlan> {
  template <class V>
  static void Visit(V&& v) {
    using R = MemoryPlan;
    v(&R::budget, ReportField{"budget"});
    v(&R::budget_cap, ReportField{"budget_cap"});
    v(&R::weights, ReportField{"weights"});
    v(&R::weight_cache, ReportField{"weight_cache"});
    v(&R::workspace, ReportField{"workspace"});
    v(&R::serving, ReportField{"serving"});
    v(&R::kv, ReportField{"kv"});
    v(&R::slack, ReportField{"slack"});
    v(&R::kv_blocks, ReportField{"kv_blocks"});
    v(&R::block_size, ReportField{"block_size"});
    v(&R::kv_dtype, ReportField{"kv_dtype", kCombineSame});
    v(&R::kv_capacity_tokens, ReportField{"kv_capacity_tokens"});
    v(&R::kv_swap_blocks, ReportField{"kv_swap_blocks"});
    v(&R::kv_was_swap_blocks, ReportField{"kv_was_swap_blocks"});
    v(&R::was_swap_slots, ReportField{"was_swap_slots"});
    v(&R::cache_slots, ReportField{"cache_slots"});
    v(&R::auto_without_cache, ReportField{"auto_without_cache"});
  }
};

template <>
struct ReportFieldsOf<ReusingAllocatorStats> {
  template <class V>
  static void Visit(V&& v) {
    using R = ReusingAllocatorStats;
    v(&R::scratch_budget_bytes, ReportField{"scratch_budget_bytes"});
    v(&R::scratch_peak_bytes, ReportField{"scratch_peak_bytes"});
    v(&R::mapped_peak_bytes, ReportField{"mapped_peak_bytes"});
    v(&R::reuses, ReportField{"reuses"});
    v(&R::maps, ReportField{"maps"});
  }
};

template <>
struct ReportFieldsOf<PoolStats> {
  template <class V>
  static void Visit(V&& v) {
    using R = PoolStats;
    v(&R::bytes_sent, ReportField{"bytes_sent"});
    v(&R::bytes_received, ReportField{"bytes_received", kCombineSum});
    v(&R::fetches, ReportField{"fetches"});
    v(&R::remote_computes, ReportField{"remote_computes"});
    v(&R::served_fetches, ReportField{"served_fetches"});
    v(&R::served_computes, ReportField{"served_computes"});
    v(&R::passes_was, ReportField{"passes_was", kCombineSum});
    v(&R::passes_cas, ReportField{"passes_cas", kCombineSum});
    v(&R::passes_local, ReportField{"passes_local", kCombineSum});
    v(&R::switches, ReportField{"switches", kCombineSum});
    v(&R::fetch_wait_s, ReportField{"fetch_wait_s"});
    v(&R::remote_wait_s, ReportField{"remote_wait_s"});
    v(&R::learned_extra_was_s, ReportField{"learned_extra_was_s"});
    v(&R::cache_dropped_after_pass, ReportField{"cache_dropped_after_pass"});
    v(&R::was_committed_after_pass, ReportField{"was_committed_after_pass"});
    v(&R::serving_released_after_pass, ReportField{"serving_released_after_pass"});
    v(&R::learned_extra_cas_s, ReportField{"learned_extra_cas_s"});
  }
};

template <>
struct ReportFieldsOf<PoolCalibration> {
  template <class V>
  static void Visit(V&& v) {
    using R = PoolCalibration;
    v(&R::gemm_flops, ReportField{"gemm_flops"});
    v(&R::bandwidth, ReportField{"bandwidth"});
    v(&R::latency_s, ReportField{"latency_s"});
  }
};

template <>
struct ReportFieldsOf<InferRankReport> {
  template <class V>
  static void Visit(V&& v) {
    using R = InferRankReport;
    v(&R::rank, ReportField{"rank"});
    v(&R::world, ReportField{"world"});
    v(&R::mode, ReportField{"mode", kCombineSame});
    v(&R::requests, ReportField{"requests", kCombineSum});
    v(&R::finished, ReportField{"finished"});
    v(&R::errors, ReportField{"errors", kCombineSum});
    v(&R::split, ReportField{"split"});
    v(&R::skipped_done, ReportField{"skipped_done", kCombineSum});
    v(&R::generated_tokens, ReportField{"generated_tokens", kCombineSum});
    v(&R::prompt_tokens, ReportField{"prompt_tokens"});
    v(&R::steps, ReportField{"steps"});
    v(&R::peak_sequences, ReportField{"peak_sequences", kCombineSum | kCombineMax});
    v(&R::preemptions, ReportField{"preemptions", kCombineSum});
    v(&R::recomputed_tokens, ReportField{"recomputed_tokens", kCombineSum});
    v(&R::prefill_tokens, ReportField{"prefill_tokens", kCombineSum});
    v(&R::prefix_hit_tokens, ReportField{"prefix_hit_tokens", kCombineSum});
    v(&R::prefix_evictions, ReportField{"prefix_evictions", kCombineSum});
    v(&R::engine_seconds, ReportField{"engine_seconds"});
    v(&R::model_flops, ReportField{"model_flops", kCombineSum});
    v(&R::decode, ReportField{"decode"});
    v(&R::run_seconds, ReportField{"run_seconds", kCombineMax});
    v(&R::load_seconds, ReportField{"load_seconds"});
    v(&R::rank_seconds, ReportField{"rank_seconds", kCombineMax});
    v(&R::tokens_per_s, ReportField{"tokens_per_s"});
    v(&R::kv_capacity_tokens, ReportField{"kv_capacity_tokens", kCombineSum | kCombineMin});
    v(&R::kv_bytes, ReportField{"kv_bytes"});
    v(&R::held_weight_bytes, ReportField{"held_weight_bytes"});
    v(&R::weights_layout, ReportField{"weights_layout"});
    v(&R::weights_format, ReportField{"weights_format"});
    v(&R::kernel_level, ReportField{"kernel_level"});
    v(&R::accounting_exact, ReportField{"accounting_exact", kCombineMin});
    v(&R::bytes_moved, ReportField{"bytes_moved"});
    v(&R::bytes_moved_per_token, ReportField{"bytes_moved_per_token"});
    v(&R::plan, ReportField{"plan"});
    v(&R::allocator, ReportField{"allocator"});
    v(&R::memory, ReportField{"memory"});
    v(&R::pool, ReportField{"pool"});
    v(&R::calibration, ReportField{"calibration", kCombineSame});
    v(&R::predicted_crossover_rows, ReportField{"predicted_crossover_rows", kCombineSame});
  }
};

}  // namespace pw
