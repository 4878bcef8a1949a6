#include "infer/job_summary.h"

#include <gtest/gtest.h>

namespace pw {
namespace {

InferRankReport RankReport(int rank, int64_t generated, double run_seconds, int64_t kv_tokens) {
  InferRankReport r;
  r.rank = rank;
  r.world = 2;
  r.mode = "was";
  r.split = "queue";
  r.requests = 3 + rank;
  r.generated_tokens = generated;
  r.run_seconds = run_seconds;
  r.kv_capacity_tokens = kv_tokens;
  r.peak_sequences = 2 + rank;
  r.accounting_exact = true;
  r.pool.bytes_received = 1000 * (rank + 1);
  r.pool.passes_was = 5;
  r.decode = {4, 8, 80.0, 2.0, 0.5};
  r.plan.kv_dtype = KvDtype::kFp32;
  return r;
}

TEST(RankReport, RoundTripsThroughItsJson) {
  InferRankReport r = RankReport(1, 40, 2.5, 256);
  r.memory = MeasuredMemoryReport{};
  r.memory->measured_bytes = 123;
  r.predicted_crossover_rows = 17;
  const nlohmann::json j = ReportToJson(r);
  EXPECT_FALSE(j.contains("calibration"));  // an empty optional is left out
  Result<InferRankReport> back = ReportFromJson<InferRankReport>(nlohmann::json::parse(j.dump()), "rank 1");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(ReportToJson(*back), j);
  EXPECT_EQ(back->memory->measured_bytes, 123);
  EXPECT_EQ(*back->predicted_crossover_rows, 17);
}

TEST(RankReport, AMissingOrMistypedFieldIsAnErrorNotAThrow) {
  nlohmann::json j = ReportToJson(RankReport(0, 1, 1, 1));
  j["pool"].erase("fetches");
  Result<InferRankReport> missing = ReportFromJson<InferRankReport>(j, "rank 0's summary");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "rank 0's summary: key pool.fetches is missing");

  j = ReportToJson(RankReport(0, 1, 1, 1));
  j["generated_tokens"] = "many";
  Result<InferRankReport> mistyped = ReportFromJson<InferRankReport>(j, "rank 0's summary");
  ASSERT_FALSE(mistyped.ok());
  EXPECT_NE(mistyped.status().message().find("key generated_tokens has the wrong type (string)"), std::string::npos);

  EXPECT_FALSE(ReportFromJson<InferRankReport>(nlohmann::json::array(), "x").ok());
  j = ReportToJson(RankReport(0, 1, 1, 1));
  j["plan"]["kv_dtype"] = "fp7";
  EXPECT_FALSE(ReportFromJson<InferRankReport>(j, "x").ok());
}

TEST(JobSummary, CombinesEachFieldByItsDeclaredRule) {
  InferRankReport a = RankReport(0, 40, 2.0, 300), b = RankReport(1, 60, 3.0, 200);
  b.accounting_exact = false;
  a.memory = MeasuredMemoryReport{};
  a.memory->measured_bytes = 10;
  a.memory->planned_bytes = 20;
  a.memory->load_peak_bytes = 7;
  b.memory = MeasuredMemoryReport{};
  b.memory->measured_bytes = 30;
  b.memory->planned_bytes = 40;
  b.memory->load_peak_bytes = 5;
  const InferJobSummary s = SummarizeJob({a, b}, 1 << 20, 4.0);
  EXPECT_EQ(s.ranks, 2);
  EXPECT_EQ(s.mode, "was");
  EXPECT_EQ(s.requests, 7);                      // sum
  EXPECT_EQ(s.generated_tokens, 100);            // sum
  EXPECT_DOUBLE_EQ(s.seconds, 3.0);              // max
  EXPECT_DOUBLE_EQ(s.tokens_per_s, 100 / 3.0);
  EXPECT_EQ(s.kv_capacity_tokens_per_rank, 200);  // min
  EXPECT_EQ(s.kv_capacity_tokens_total, 500);     // sum
  EXPECT_EQ(s.peak_sequences_per_rank, 3);        // max
  EXPECT_EQ(s.peak_sequences_total, 5);           // sum
  EXPECT_DOUBLE_EQ(s.bytes_moved_per_token, 3000 / 100.0);
  EXPECT_EQ(s.passes_was, 10);
  EXPECT_FALSE(s.accounting_exact);  // every rank's must be
  EXPECT_DOUBLE_EQ(s.decode_tokens_per_s, 8.0);   // 4 rows/s per rank
  EXPECT_DOUBLE_EQ(s.decode_attention_share, 0.25);
  EXPECT_DOUBLE_EQ(*s.memory_measured_max_bytes, 30);  // the rank that measured most
  EXPECT_DOUBLE_EQ(*s.memory_planned_bytes, 40);       // ... and its plan
  EXPECT_DOUBLE_EQ(*s.memory_load_peak_max_bytes, 7);  // the largest load peak of any rank
  const nlohmann::json j = JobSummaryJson(s);
  EXPECT_EQ(j["rank_summaries"].size(), 2u);
  EXPECT_EQ(j["kv_dtype"], "fp32");
  EXPECT_FALSE(j.contains("predicted_crossover_rows"));
  EXPECT_EQ(FormatJobSummary(s).rfind("summary: mode was, 7 requests (0 already done, 0 failed), 100 tokens", 0), 0u);
}

TEST(JobSummary, WithoutRanksIsEmpty) {
  const InferJobSummary s = SummarizeJob({}, 0, 0);
  EXPECT_EQ(s.kv_capacity_tokens_per_rank, -1);
  EXPECT_TRUE(s.accounting_exact);
  EXPECT_FALSE(s.memory_measured_max_bytes.has_value());
  EXPECT_EQ(JobSummaryJson(s)["mode"], "");
}

}  // namespace
}  // namespace pw
