// Checkpoints: resumption — training K+J steps straight
// gives bitwise the same per-step losses and final parameters as training K
// steps, checkpointing, and resuming for J steps, on real local ranks
// (pw_runtime_rank_helper under LaunchLocalRanks, as executor_test.cc).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "comm/launcher.h"
#include "model/checkpoint.h"
#include "runtime/test_corpus.h"

namespace pw {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("pw_ckpt_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// --- resume on local ranks -------------------------------------------------

std::string CorpusPath() {
  static const std::string path = testing_support::WriteWordCorpus(
      "pw_ckpt_test_corpus",
      {"stages", "send", "activations", "and", "the", "optimizer", "keeps", "moments", "in", "a", "checkpoint",
       "file."},
      7, 30000, 9);
  return path;
}

struct RunOutput {
  Status status;
  std::vector<double> losses;
  std::map<std::string, std::vector<double>> params;  // name -> sum, abs, weighted (rank order)
  std::string stderr_text;
};

RunOutput RunRanks(int pp, int dp, const std::string& schedule,
                   const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {PW_RUNTIME_RANK_HELPER, "schedule=" + schedule,
                                   "pp=" + std::to_string(pp), "dp=" + std::to_string(dp),
                                   "m=4", "mbs=2", "seed=5", "data=" + CorpusPath(), "lr=0.01",
                                   "clip=0.5", "warmup=2", "params=1", "model.d_model=32",
                                   "model.n_layers=4", "model.n_heads=2", "model.seq_len=16"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  RunOutput result;
  std::vector<std::string> out;
  std::mutex mu;
  LaunchOptions options;
  options.timeout = std::chrono::seconds(90);
  options.sink = [&](int, OutputStream stream, const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    if (stream == OutputStream::kStdout) out.push_back(line);
    else result.stderr_text += line + "\n";
  };
  result.status = LaunchLocalRanks(argv, pp * dp, options);
  for (const std::string& line : out) {
    size_t pos = line.find("] ");
    std::string body = pos == std::string::npos ? line : line.substr(pos + 2);
    long long step;
    double loss, s, a, w;
    char name[256];
    if (std::sscanf(body.c_str(), "val step %lld loss %lf", &step, &loss) == 2) continue;
    if (std::sscanf(body.c_str(), "step %lld loss %lf", &step, &loss) == 2) {
      result.losses.push_back(loss);
    } else if (std::sscanf(body.c_str(), "param %255s %lf %lf %lf", name, &s, &a, &w) == 4) {
      auto& v = result.params[name];
      v.insert(v.end(), {s, a, w});
    }
  }
  return result;
}

void ExpectResumeMatches(int pp, int dp, const std::string& schedule) {
  constexpr int kK = 3, kJ = 3;
  const std::string dir = TempPath("ckpt_" + schedule + std::to_string(pp) + std::to_string(dp));
  std::filesystem::remove_all(dir);
  const std::string total = "steps=" + std::to_string(kK + kJ);

  RunOutput straight = RunRanks(pp, dp, schedule, {total});
  ASSERT_TRUE(straight.status.ok()) << straight.status.ToString() << straight.stderr_text;
  ASSERT_EQ(straight.losses.size(), static_cast<size_t>(kK + kJ));

  // The LR schedule must be the K+J-step one: total_steps pins it.
  RunOutput first = RunRanks(pp, dp, schedule,
                             {"steps=" + std::to_string(kK), "total_steps=" + std::to_string(kK + kJ),
                              "ckpt_dir=" + dir, "ckpt_every=2"});
  ASSERT_TRUE(first.status.ok()) << first.status.ToString() << first.stderr_text;
  Result<CheckpointManifest> manifest = ReadCheckpointManifest(dir);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->step, kK);
  EXPECT_EQ(manifest->optimizer_steps, kK);
  EXPECT_EQ(manifest->pp, pp);
  EXPECT_EQ(manifest->dp, dp);
  EXPECT_EQ(manifest->optimizer.total_steps, kK + kJ);
  // The manifest records the writing job's settings (job/train_job.h).
  const nlohmann::json job = nlohmann::json::parse(manifest->job, nullptr, false);
  ASSERT_TRUE(job.is_object()) << manifest->job;
  EXPECT_EQ(job.value("pp", 0), pp);
  EXPECT_EQ(job.value("decay_steps", 0), kK + kJ);
  for (const CheckpointStage& s : manifest->stages) {
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir) / s.file)) << s.file;
  }

  RunOutput resumed = RunRanks(pp, dp, schedule, {total, "resume=" + dir});
  ASSERT_TRUE(resumed.status.ok()) << resumed.status.ToString() << resumed.stderr_text;
  ASSERT_EQ(first.losses.size(), static_cast<size_t>(kK));
  ASSERT_EQ(resumed.losses.size(), static_cast<size_t>(kJ));
  for (int i = 0; i < kK; ++i) EXPECT_EQ(first.losses[i], straight.losses[i]) << "step " << i;
  for (int i = 0; i < kJ; ++i) {
    EXPECT_EQ(resumed.losses[i], straight.losses[kK + i]) << "step " << kK + i;
  }
  ASSERT_FALSE(straight.params.empty());
  EXPECT_EQ(resumed.params, straight.params);  // bitwise: 17-digit summaries

  // A checkpoint of another model is refused with a clear error.
  RunOutput other = RunRanks(pp, dp, schedule, {total, "resume=" + dir, "model.d_model=16"});
  EXPECT_FALSE(other.status.ok());
  EXPECT_NE(other.stderr_text.find("cannot resume from " + dir), std::string::npos)
      << other.stderr_text;
  EXPECT_NE(other.stderr_text.find("model config"), std::string::npos) << other.stderr_text;
  std::filesystem::remove_all(dir);
}

TEST(CheckpointTest, ResumeReproducesLossCurvePp2) { ExpectResumeMatches(2, 1, "1f1b"); }
TEST(CheckpointTest, ResumeReproducesLossCurvePp2Dp2) { ExpectResumeMatches(2, 2, "1f1b"); }

}  // namespace
}  // namespace pw
