// End to end: 2-rank pipeline training (1F1B, local processes) with real
// side-task processes in its bubbles. The test binary re-executes itself as
// each rank (HarvestDistTest.RankBody, run only under the launcher), with
// the side-task host tool as the task process.
//   - gated pagerank: the losses are bitwise those of the same run without
//     side tasks, and the report has steps > 0 and pauses > 0
//   - a task that crashes: training completes and the report names it
//   - --harvest-paired 2: the report and the summary carry the in-run
//     paired slowdown with its interval
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include "comm/launcher.h"
#include "harvest/manager.h"
#include "runtime/train_worker.h"
#include "runtime/trainer.h"

namespace pw {
namespace {

constexpr int kSteps = 30;

TrainJob DistConfig() {
  TrainJob config;
  config.model.d_model = 128;
  config.model.n_layers = 4;
  config.model.n_heads = 4;
  config.model.seq_len = 64;
  config.pp = 2;
  config.microbatches = 2;
  config.microbatch_size = 4;
  config.steps = kSteps;
  config.eval_batches = 0;
  return config;
}

// One rank: PW_HARVEST_BODY_TASK (a --side-task spec, or empty for none),
// PW_HARVEST_BODY_METRICS (the --metrics-out file), PW_HARVEST_BODY_PAIRED
// (--harvest-paired K, or empty).
TEST(HarvestDistTest, RankBody) {
  if (std::getenv("PW_HARVEST_BODY") == nullptr) GTEST_SKIP() << "runs as a rank of the tests below";
  at::set_num_threads(1);
  TrainJob config = DistConfig();
  const char* task_env = std::getenv("PW_HARVEST_BODY_TASK");
  const char* metrics_env = std::getenv("PW_HARVEST_BODY_METRICS");
  const std::string task = task_env != nullptr ? task_env : "";
  if (metrics_env != nullptr) config.metrics_out = metrics_env;
  TrainObserverHooks observer;
  if (!task.empty()) {
    HarvestOptions options;
    options.policy = HarvestPolicy::kGated;
    options.host_binary = PW_SIDE_TASK_HOST;
    options.min_resume_us = 0;
    // Every run harvests from step 3 on, however fast training is here.
    options.wait_for_setup_ms = 60000;
    Result<SideTaskSpec> spec = ParseSideTaskSpec(task);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    options.tasks.push_back(*spec);
    if (const char* paired = std::getenv("PW_HARVEST_BODY_PAIRED"); paired != nullptr && *paired != '\0') {
      options.paired_block_steps = std::atoi(paired);
      options.paired_seed = config.seed;
      observer.summarize = [](const std::vector<std::string>& reports, const std::vector<double>& steps) {
        return FormatHarvestSummary(reports, steps, 3);
      };
    }
    observer.make = [options](const RankContext& c) -> Result<std::unique_ptr<RankObserver>> {
      PW_ASSIGN_OR_RETURN(std::unique_ptr<HarvestManager> m, HarvestManager::Create(c, options));
      return std::unique_ptr<RankObserver>(std::move(m));
    };
  }
  Result<Schedule> schedule = GenerateTrainingSchedule(config);
  ASSERT_TRUE(schedule.ok());
  Status status = RunWorker(config, *schedule, /*print_params=*/true, observer);
  ASSERT_TRUE(status.ok()) << status.ToString();
}

struct RunResult {
  std::vector<std::string> losses;  // printed with 17 digits: compared as text (bitwise)
  std::vector<std::string> out;     // every stdout line
  nlohmann::json reports;           // the observers line, or null
};

RunResult Train(const std::string& task, const std::string& paired = "") {
  RunResult result;
  const std::string metrics = (std::filesystem::temp_directory_path() /
                               ("pw_harvest_dist_" + std::to_string(getpid()) + ".jsonl")).string();
  std::vector<std::string> out;
  std::mutex mu;
  LaunchOptions options;
  options.timeout = std::chrono::seconds(120);
  options.env = {{"PW_HARVEST_BODY", "1"}, {"PW_HARVEST_BODY_TASK", task}, {"PW_HARVEST_BODY_METRICS", metrics},
                 {"PW_HARVEST_BODY_PAIRED", paired}};
  options.sink = [&](int, OutputStream stream, const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    if (stream == OutputStream::kStdout) out.push_back(line);
  };
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  Status launched = LaunchLocalRanks({self, "--gtest_filter=HarvestDistTest.RankBody"}, 2, options);
  EXPECT_TRUE(launched.ok()) << launched.ToString();
  for (const std::string& line : out) {
    const size_t pos = line.find("] step ");
    const size_t loss = line.find(" loss ");
    if (pos == std::string::npos || loss == std::string::npos) continue;
    result.losses.push_back(line.substr(loss + 6, line.find(' ', loss + 6) - loss - 6));
  }
  std::ifstream in(metrics);
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("observers")) result.reports = j["observers"];
  }
  std::filesystem::remove(metrics, ec);
  result.out = std::move(out);
  return result;
}

TEST(HarvestDistTest, GatedSideTaskLeavesTrainingBitwiseUnchanged) {
  RunResult plain = Train("");
  RunResult harvested = Train("pagerank:scale=10@rank=1");
  ASSERT_EQ(plain.losses.size(), static_cast<size_t>(kSteps));
  EXPECT_EQ(harvested.losses, plain.losses);
  ASSERT_TRUE(harvested.reports.is_array());
  ASSERT_EQ(harvested.reports.size(), 2u);
  const nlohmann::json& r1 = harvested.reports[1];
  std::printf("rank 1 report: %s\n", r1.dump().c_str());
  EXPECT_TRUE(harvested.reports[0]["tasks"].empty());
  ASSERT_EQ(r1["tasks"].size(), 1u);
  EXPECT_EQ(r1["tasks"][0]["name"], "pagerank");
  EXPECT_GT(r1["steps"].get<int64_t>(), 0);
  EXPECT_GT(r1["pauses"].get<int64_t>(), 0);
  EXPECT_GT(r1["bubble_seconds"].get<double>(), 0);
  EXPECT_TRUE(r1["failures"].empty()) << r1["failures"].dump();
}

TEST(HarvestDistTest, ACrashingSideTaskDoesNotStopTraining) {
  RunResult run = Train("pagerank:scale=10,crash_after=2@rank=1");
  EXPECT_EQ(run.losses.size(), static_cast<size_t>(kSteps));
  ASSERT_TRUE(run.reports.is_array());
  ASSERT_EQ(run.reports.size(), 2u);
  const nlohmann::json& r1 = run.reports[1];
  std::printf("rank 1 report: %s\n", r1.dump().c_str());
  ASSERT_FALSE(r1["failures"].empty());
  EXPECT_NE(r1["failures"][0].get<std::string>().find("pagerank"), std::string::npos);
}

TEST(HarvestDistTest, PairedBlocksReportTheInRunSlowdown) {
  RunResult run = Train("pagerank:scale=10@rank=1", "2");
  EXPECT_EQ(run.losses.size(), static_cast<size_t>(kSteps));
  ASSERT_TRUE(run.reports.is_array());
  ASSERT_EQ(run.reports.size(), 2u);
  const nlohmann::json& r1 = run.reports[1];
  std::printf("rank 1 report: %s\n", r1.dump().c_str());
  ASSERT_TRUE(r1.contains("paired"));
  const nlohmann::json& p = r1["paired"];
  EXPECT_EQ(p["block_steps"], 2);
  // The tasks harvest from step 3 (wait_for_setup_ms): pairs of 4 steps from step 4.
  EXPECT_GE(p["pairs"].get<int64_t>(), 4);
  EXPECT_LE(p["ci95_low"].get<double>(), p["slowdown"].get<double>());
  EXPECT_GE(p["ci95_high"].get<double>(), p["slowdown"].get<double>());
  EXPECT_GT(p["held_step_ms"].get<double>(), 0);
  EXPECT_GT(r1["steps"].get<int64_t>(), 0);  // the task ran in the allowed blocks
  bool summarized = false;
  for (const std::string& line : run.out) {
    summarized = summarized || (line.find("in-run slowdown on rank 1") != std::string::npos &&
                                line.find("95% CI") != std::string::npos);
  }
  EXPECT_TRUE(summarized);
}

}  // namespace
}  // namespace pw
