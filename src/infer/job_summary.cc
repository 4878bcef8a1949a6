#include "infer/job_summary.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace pw {
namespace {

std::string Printf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  char buf[1024];
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

// Ranks run side by side: the job's decode rates are the sums of the
// ranks' rates (each over its own decode time).
void AddDecodeRates(const std::vector<InferRankReport>& ranks, InferJobSummary& j) {
  double decode_seconds = 0, attention_seconds = 0;
  for (const InferRankReport& r : ranks) {
    const double s = r.decode.seconds;
    if (s <= 0) continue;
    j.decode_tokens_per_s += static_cast<double>(r.decode.rows) / s;
    j.decode_flops_per_s += r.decode.flops / s;
    decode_seconds += s;
    attention_seconds += r.decode.attention_seconds;
  }
  j.decode_attention_share = decode_seconds > 0 ? attention_seconds / decode_seconds : 0.0;
}

// The rank that measured the most memory (the first of equals), with its
// plan, and the largest load peak of the ranks that measured.
void AddMeasuredMemory(const std::vector<InferRankReport>& ranks, const InferRankReport& most,
                       InferJobSummary& j) {
  const InferRankReport* largest = nullptr;
  for (const InferRankReport& r : ranks) {
    if (r.memory && (largest == nullptr || r.memory->measured_bytes > largest->memory->measured_bytes)) {
      largest = &r;
    }
  }
  if (largest == nullptr) return;
  j.memory_measured_max_bytes = static_cast<double>(largest->memory->measured_bytes);
  j.memory_planned_bytes = static_cast<double>(largest->memory->planned_bytes);
  j.memory_load_peak_max_bytes = std::max(0.0, static_cast<double>(most.memory->load_peak_bytes));
}

}  // namespace

InferJobSummary SummarizeJob(std::vector<InferRankReport> ranks, int64_t budget_bytes, double wall_s) {
  InferJobSummary j;
  const CombinedReports<InferRankReport> all = CombineReports(ranks);
  j.ranks = static_cast<int64_t>(ranks.size());
  j.budget_per_rank = budget_bytes;
  j.wall_seconds = wall_s;
  if (!ranks.empty()) {
    j.mode = ranks.front().mode;
    j.kv_dtype = ranks.front().plan.kv_dtype;
    j.weights_layout = ranks.front().weights_layout;
    j.weights_format = ranks.front().weights_format;
    j.kernel_level = ranks.front().kernel_level;
    j.kv_capacity_tokens_per_rank = all.min.kv_capacity_tokens;
    j.predicted_crossover_rows = ranks.front().predicted_crossover_rows;
    j.calibration = ranks.front().calibration;
  }
  j.requests = all.sum.requests;
  j.skipped_done = all.sum.skipped_done;
  j.errors = all.sum.errors;
  j.generated_tokens = all.sum.generated_tokens;
  j.seconds = all.max.run_seconds;
  j.tokens_per_s = static_cast<double>(j.generated_tokens) / std::max(j.seconds, 1e-9);
  j.model_flops_per_s = all.sum.model_flops / std::max(j.seconds, 1e-9);
  AddDecodeRates(ranks, j);
  j.kv_capacity_tokens_total = all.sum.kv_capacity_tokens;
  j.peak_sequences_per_rank = all.max.peak_sequences;
  j.peak_sequences_total = all.sum.peak_sequences;
  j.bytes_moved_per_token = j.generated_tokens > 0 ? static_cast<double>(all.sum.pool.bytes_received) /
                                                         static_cast<double>(j.generated_tokens)
                                                   : 0.0;
  j.passes_was = all.sum.pool.passes_was;
  j.passes_cas = all.sum.pool.passes_cas;
  j.passes_local = all.sum.pool.passes_local;
  j.switches = all.sum.pool.switches;
  j.preemptions = all.sum.preemptions;
  j.recomputed_tokens = all.sum.recomputed_tokens;
  j.prefill_tokens = all.sum.prefill_tokens;
  j.prefix_hit_tokens = all.sum.prefix_hit_tokens;
  j.prefix_evictions = all.sum.prefix_evictions;
  const int64_t prompt_positions = j.prefill_tokens + j.prefix_hit_tokens;
  j.prefix_hit_rate = prompt_positions > 0 ? static_cast<double>(j.prefix_hit_tokens) / prompt_positions : 0.0;
  j.accounting_exact = ranks.empty() || all.min.accounting_exact;
  AddMeasuredMemory(ranks, all.max, j);
  j.rank_summaries = std::move(ranks);
  return j;
}

std::string FormatJobSummary(const InferJobSummary& js) {
  std::string text = Printf("summary: mode %s, %lld requests (%lld already done, %lld failed), %lld tokens in %.2f s = %.1f tok/s; "
              "kv %lld tokens/rank; peak %d sequences/rank; %.0f B moved/token; passes was %lld cas %lld local %lld, "
              "switches %lld; %lld preemptions (%lld tokens recomputed); memory accounting %s\n",
              js.mode.c_str(), static_cast<long long>(js.requests), static_cast<long long>(js.skipped_done),
              static_cast<long long>(js.errors), static_cast<long long>(js.generated_tokens), js.seconds,
              js.tokens_per_s, static_cast<long long>(js.kv_capacity_tokens_per_rank), js.peak_sequences_per_rank,
              js.bytes_moved_per_token, static_cast<long long>(js.passes_was),
              static_cast<long long>(js.passes_cas), static_cast<long long>(js.passes_local),
              static_cast<long long>(js.switches), static_cast<long long>(js.preemptions),
              static_cast<long long>(js.recomputed_tokens),
              js.accounting_exact ? "exact" : "MISMATCH (see rank warnings)");
  text += Printf("prefix cache: %.1f%% of prompt positions hit (%lld tokens not prefilled, %lld prefilled); "
                 "%lld cached blocks evicted\n",
                 100 * js.prefix_hit_rate, static_cast<long long>(js.prefix_hit_tokens),
                 static_cast<long long>(js.prefill_tokens), static_cast<long long>(js.prefix_evictions));
  if (js.memory_measured_max_bytes) {
    const double measured = *js.memory_measured_max_bytes;
    const double planned = js.memory_planned_bytes.value_or(0);
    text += Printf("memory: measured %.1f MiB (own resident peak while generating, above the start; largest rank) "
                   "against %.1f MiB planned (%+.0f%%); loading peaked at %.1f MiB\n", measured / 1048576,
                   planned / 1048576, 100 * (measured / std::max(planned, 1.0) - 1),
                   js.memory_load_peak_max_bytes.value_or(0) / 1048576);
  }
  text += Printf("model math: %.1f GFLOP/s over the run; decode-only passes %.0f tok/s at %.1f GFLOP/s "
                 "(%.0f%% of their time in attention); weights %s %s, kernels %s\n",
                 js.model_flops_per_s * 1e-9, js.decode_tokens_per_s, js.decode_flops_per_s * 1e-9,
                 100 * js.decode_attention_share, js.weights_layout.c_str(), js.weights_format.c_str(),
                 js.kernel_level.c_str());
  if (js.predicted_crossover_rows) {
    text += Printf("cost model: WaS beats CaS from %lld rows per pass\n",
                   static_cast<long long>(*js.predicted_crossover_rows));
  }
  return text;
}

}  // namespace pw
