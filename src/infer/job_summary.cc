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

}  // namespace

nlohmann::json JobSummary(const std::vector<nlohmann::json>& ranks, int64_t budget_bytes, double wall_s) {
  using nlohmann::json;
  json j;
  int64_t generated = 0, requests = 0, received = 0, errors = 0, skipped = 0, kv_total = 0, kv_min = -1;
  int64_t passes_was = 0, passes_cas = 0, passes_local = 0, switches = 0, preemptions = 0, recomputed = 0;
  int peak_max = 0, peak_sum = 0;
  double slowest = 0;
  bool exact = true;
  double measured_max = -1, planned_at_max = 0;  // the rank with the most measured memory
  double load_peak_max = 0;
  // Ranks run side by side: the job's rates are the sums of the ranks'.
  double model_flops = 0, decode_rate = 0, decode_flop_rate = 0;
  double decode_seconds = 0, decode_attention_seconds = 0;
  for (const json& r : ranks) {
    model_flops += r.value("model_flops", 0.0);
    if (r.contains("decode") && r["decode"]["seconds"].get<double>() > 0) {
      const double s = r["decode"]["seconds"].get<double>();
      decode_rate += r["decode"]["rows"].get<double>() / s;
      decode_flop_rate += r["decode"]["flops"].get<double>() / s;
      decode_seconds += s;
      decode_attention_seconds += r["decode"].value("attention_seconds", 0.0);
    }
    if (r.contains("memory")) load_peak_max = std::max(load_peak_max, r["memory"].value("load_peak_bytes", 0.0));
    if (r.contains("memory") && r["memory"]["measured_bytes"].get<double>() > measured_max) {
      measured_max = r["memory"]["measured_bytes"].get<double>();
      planned_at_max = r["memory"]["planned_bytes"].get<double>();
    }
    generated += r["generated_tokens"].get<int64_t>();
    requests += r["requests"].get<int64_t>();
    errors += r["errors"].get<int64_t>();
    skipped += r["skipped_done"].get<int64_t>();
    received += r["pool"]["bytes_received"].get<int64_t>();
    const int64_t kv = r["kv_capacity_tokens"].get<int64_t>();
    kv_total += kv;
    kv_min = kv_min < 0 ? kv : std::min(kv_min, kv);
    peak_max = std::max(peak_max, r["peak_sequences"].get<int>());
    peak_sum += r["peak_sequences"].get<int>();
    passes_was += r["pool"]["passes_was"].get<int64_t>();
    passes_cas += r["pool"]["passes_cas"].get<int64_t>();
    passes_local += r["pool"]["passes_local"].get<int64_t>();
    switches += r["pool"]["switches"].get<int64_t>();
    preemptions += r.value("preemptions", int64_t{0});
    recomputed += r.value("recomputed_tokens", int64_t{0});
    slowest = std::max(slowest, r["run_seconds"].get<double>());
    exact = exact && r["accounting_exact"].get<bool>();
    if (r.contains("predicted_crossover_rows") && r["rank"] == 0) {
      j["predicted_crossover_rows"] = r["predicted_crossover_rows"];
      j["calibration"] = r["calibration"];
    }
  }
  j["mode"] = ranks.empty() ? "" : ranks[0]["mode"];
  j["kv_dtype"] = ranks.empty() ? "fp32" : ranks[0]["plan"].value("kv_dtype", "fp32");
  j["ranks"] = static_cast<int64_t>(ranks.size());
  j["budget_per_rank"] = budget_bytes;
  j["requests"] = requests;
  j["skipped_done"] = skipped;
  j["errors"] = errors;
  j["generated_tokens"] = generated;
  j["seconds"] = slowest;  // generation time of the slowest rank
  j["wall_seconds"] = wall_s;
  j["tokens_per_s"] = generated / std::max(slowest, 1e-9);
  j["model_flops_per_s"] = model_flops / std::max(slowest, 1e-9);
  j["decode_tokens_per_s"] = decode_rate;      // passes with only decode rows
  j["decode_flops_per_s"] = decode_flop_rate;
  // Of the decode passes' time (all ranks), the share spent in attention:
  // memory-bound (it reads the K/V history), where the rest is mostly GEMM.
  j["decode_attention_share"] = decode_seconds > 0 ? decode_attention_seconds / decode_seconds : 0.0;
  j["kv_capacity_tokens_per_rank"] = kv_min;
  j["kv_capacity_tokens_total"] = kv_total;
  j["peak_sequences_per_rank"] = peak_max;
  j["peak_sequences_total"] = peak_sum;
  // Every byte moved is received once: count it at the receiver.
  j["bytes_moved_per_token"] = generated > 0 ? static_cast<double>(received) / generated : 0.0;
  j["passes_was"] = passes_was;
  j["passes_cas"] = passes_cas;
  j["passes_local"] = passes_local;
  j["switches"] = switches;
  j["preemptions"] = preemptions;  // sequences whose KV blocks were freed to be recomputed
  j["recomputed_tokens"] = recomputed;
  j["accounting_exact"] = exact;
  if (measured_max >= 0) {
    j["memory_measured_max_bytes"] = measured_max;  // resident peak above start, the largest rank
    j["memory_planned_bytes"] = planned_at_max;     // that rank's plan (budget - slack)
    j["memory_load_peak_max_bytes"] = load_peak_max;
  }
  j["rank_summaries"] = ranks;
  return j;
}

std::string FormatJobSummary(const nlohmann::json& js) {
  std::string text = Printf("summary: mode %s, %lld requests (%lld already done, %lld failed), %lld tokens in %.2f s = %.1f tok/s; "
              "kv %lld tokens/rank; peak %d sequences/rank; %.0f B moved/token; passes was %lld cas %lld local %lld, "
              "switches %lld; %lld preemptions (%lld tokens recomputed); memory accounting %s\n",
              js["mode"].get<std::string>().c_str(), static_cast<long long>(js["requests"].get<int64_t>()),
              static_cast<long long>(js["skipped_done"].get<int64_t>()),
              static_cast<long long>(js["errors"].get<int64_t>()),
              static_cast<long long>(js["generated_tokens"].get<int64_t>()), js["seconds"].get<double>(),
              js["tokens_per_s"].get<double>(), static_cast<long long>(js["kv_capacity_tokens_per_rank"].get<int64_t>()),
              js["peak_sequences_per_rank"].get<int>(), js["bytes_moved_per_token"].get<double>(),
              static_cast<long long>(js["passes_was"].get<int64_t>()),
              static_cast<long long>(js["passes_cas"].get<int64_t>()),
              static_cast<long long>(js["passes_local"].get<int64_t>()),
              static_cast<long long>(js["switches"].get<int64_t>()),
              static_cast<long long>(js.value("preemptions", int64_t{0})),
              static_cast<long long>(js.value("recomputed_tokens", int64_t{0})),
              js["accounting_exact"].get<bool>() ? "exact" : "MISMATCH (see rank warnings)");
  if (js.contains("memory_measured_max_bytes")) {
    const double measured = js["memory_measured_max_bytes"].get<double>();
    const double planned = js["memory_planned_bytes"].get<double>();
    text += Printf("memory: measured %.1f MiB (own resident peak while generating, above the start; largest rank) "
                   "against %.1f MiB planned (%+.0f%%); loading peaked at %.1f MiB\n", measured / 1048576,
                   planned / 1048576, 100 * (measured / std::max(planned, 1.0) - 1),
                   js.value("memory_load_peak_max_bytes", 0.0) / 1048576);
  }
  if (js.contains("model_flops_per_s")) {
    text += Printf("model math: %.1f GFLOP/s over the run; decode-only passes %.0f tok/s at %.1f GFLOP/s "
                   "(%.0f%% of their time in attention)\n",
                   js["model_flops_per_s"].get<double>() * 1e-9, js["decode_tokens_per_s"].get<double>(),
                   js["decode_flops_per_s"].get<double>() * 1e-9,
                   100 * js.value("decode_attention_share", 0.0));
  }
  if (js.contains("predicted_crossover_rows")) {
    text += Printf("cost model: WaS beats CaS from %lld rows per pass\n",
                static_cast<long long>(js["predicted_crossover_rows"].get<int64_t>()));
  }
  return text;
}

}  // namespace pw
