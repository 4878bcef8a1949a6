// The summary of an inference job from its ranks' reports (InferRankReport):
// totals, the slowest rank's time, the per-rank minimum of KV capacity,
// bytes moved per token, and the rank reports themselves; its JSON form
// (--summary-json) and the lines the job prints. Each rank field's
// combination across ranks is the one its declaration names
// (infer/rank_report.h); the rates here are derived from those.
//
// Thread-safety: pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infer/rank_report.h"

namespace pw {

struct InferJobSummary {
  std::string mode;  // rank 0's ("" without ranks)
  KvDtype kv_dtype = KvDtype::kFp32;
  std::string weights_layout, weights_format, kernel_level;  // rank 0's (every rank resolves them alike)
  int64_t ranks = 0, budget_per_rank = 0;
  int64_t requests = 0, skipped_done = 0, errors = 0, generated_tokens = 0;
  double seconds = 0;  // generation time of the slowest rank
  double wall_seconds = 0, tokens_per_s = 0, model_flops_per_s = 0;
  double decode_tokens_per_s = 0, decode_flops_per_s = 0;  // passes with only decode rows
  // Of the decode passes' time (all ranks), the share spent in attention:
  // memory-bound (it reads the K/V history), where the rest is mostly GEMM.
  double decode_attention_share = 0;
  int64_t kv_capacity_tokens_per_rank = -1, kv_capacity_tokens_total = 0;
  int peak_sequences_per_rank = 0, peak_sequences_total = 0;
  double bytes_moved_per_token = 0;  // every byte moved is received once: counted at the receiver
  int64_t passes_was = 0, passes_cas = 0, passes_local = 0, switches = 0;
  int64_t preemptions = 0;  // sequences whose KV blocks were freed to be recomputed
  int64_t recomputed_tokens = 0;
  // Prompt positions computed, and those the prefix cache supplied instead
  // (prefill tokens saved); the hit rate is saved / (computed + saved).
  int64_t prefill_tokens = 0, prefix_hit_tokens = 0, prefix_evictions = 0;
  double prefix_hit_rate = 0;
  bool accounting_exact = true;
  // When a rank measured its memory: the largest resident peak above the
  // start, that rank's plan (budget - slack), and the largest load peak.
  std::optional<double> memory_measured_max_bytes, memory_planned_bytes, memory_load_peak_max_bytes;
  std::optional<int64_t> predicted_crossover_rows;  // rank 0's, when calibrated
  std::optional<PoolCalibration> calibration;
  std::vector<InferRankReport> rank_summaries;
};

template <>
struct ReportFieldsOf<InferJobSummary> {
  template <class V>
  static void Visit(V&& v) {
    using R = InferJobSummary;
    v(&R::mode, ReportField{"mode"});
    v(&R::kv_dtype, ReportField{"kv_dtype"});
    v(&R::weights_layout, ReportField{"weights_layout"});
    v(&R::weights_format, ReportField{"weights_format"});
    v(&R::kernel_level, ReportField{"kernel_level"});
    v(&R::ranks, ReportField{"ranks"});
    v(&R::budget_per_rank, ReportField{"budget_per_rank"});
    v(&R::requests, ReportField{"requests"});
    v(&R::skipped_done, ReportField{"skipped_done"});
    v(&R::errors, ReportField{"errors"});
    v(&R::generated_tokens, ReportField{"generated_tokens"});
    v(&R::seconds, ReportField{"seconds"});
    v(&R::wall_seconds, ReportField{"wall_seconds"});
    v(&R::tokens_per_s, ReportField{"tokens_per_s"});
    v(&R::model_flops_per_s, ReportField{"model_flops_per_s"});
    v(&R::decode_tokens_per_s, ReportField{"decode_tokens_per_s"});
    v(&R::decode_flops_per_s, ReportField{"decode_flops_per_s"});
    v(&R::decode_attention_share, ReportField{"decode_attention_share"});
    v(&R::kv_capacity_tokens_per_rank, ReportField{"kv_capacity_tokens_per_rank"});
    v(&R::kv_capacity_tokens_total, ReportField{"kv_capacity_tokens_total"});
    v(&R::peak_sequences_per_rank, ReportField{"peak_sequences_per_rank"});
    v(&R::peak_sequences_total, ReportField{"peak_sequences_total"});
    v(&R::bytes_moved_per_token, ReportField{"bytes_moved_per_token"});
    v(&R::passes_was, ReportField{"passes_was"});
    v(&R::passes_cas, ReportField{"passes_cas"});
    v(&R::passes_local, ReportField{"passes_local"});
    v(&R::switches, ReportField{"switches"});
    v(&R::preemptions, ReportField{"preemptions"});
    v(&R::recomputed_tokens, ReportField{"recomputed_tokens"});
    v(&R::prefill_tokens, ReportField{"prefill_tokens"});
    v(&R::prefix_hit_tokens, ReportField{"prefix_hit_tokens"});
    v(&R::prefix_evictions, ReportField{"prefix_evictions"});
    v(&R::prefix_hit_rate, ReportField{"prefix_hit_rate"});
    v(&R::accounting_exact, ReportField{"accounting_exact"});
    v(&R::memory_measured_max_bytes, ReportField{"memory_measured_max_bytes"});
    v(&R::memory_planned_bytes, ReportField{"memory_planned_bytes"});
    v(&R::memory_load_peak_max_bytes, ReportField{"memory_load_peak_max_bytes"});
    v(&R::predicted_crossover_rows, ReportField{"predicted_crossover_rows"});
    v(&R::calibration, ReportField{"calibration"});
    v(&R::rank_summaries, ReportField{"rank_summaries"});
  }
};

// `ranks` sorted by rank. `wall_s`: the job's wall time.
InferJobSummary SummarizeJob(std::vector<InferRankReport> ranks, int64_t budget_bytes, double wall_s);

// The --summary-json object (keys as ReportFieldsOf<InferJobSummary>).
inline nlohmann::json JobSummaryJson(const InferJobSummary& summary) { return ReportToJson(summary); }

// "summary: mode was, 11 requests (0 already done, 0 failed), ... memory
// accounting exact", the memory and model-math lines, and, when predicted,
// the cost model's crossover line.
std::string FormatJobSummary(const InferJobSummary& summary);

}  // namespace pw
