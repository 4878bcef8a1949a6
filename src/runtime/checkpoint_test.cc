// Checkpoints: the hand-written safetensors reader/writer (round trip and
// every malformed-file error), and resumption — training K+J steps straight
// gives bitwise the same per-step losses and final parameters as training K
// steps, checkpointing, and resuming for J steps, on real local ranks
// (pw_runtime_rank_helper under LaunchLocalRanks, as executor_test.cc).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "comm/launcher.h"
#include "runtime/checkpoint.h"
#include "runtime/safetensors.h"

namespace pw {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("pw_ckpt_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// A file: 8-byte little-endian header length, header, data.
void WriteRaw(const std::string& path, uint64_t length, const std::string& header,
              const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(&length), 8);
  out << header << data;
}

TEST(SafetensorsTest, RoundTrip) {
  const std::string path = TempPath("round.safetensors");
  at::Tensor f = at::randn({3, 5});
  at::Tensor i = at::arange(7, at::kLong).reshape({7, 1});
  at::Tensor scalar = at::full({}, 2.5f);
  at::Tensor empty = at::zeros({0, 4});
  at::Tensor strided = at::randn({4, 6}).t();  // non-contiguous
  ASSERT_TRUE(WriteSafetensors(path, {{"f", f}, {"i", i}, {"s", scalar}, {"e", empty},
                                      {"t", strided}},
                               {{"stage", "1"}})
                  .ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
  Result<SafetensorsContents> read = ReadSafetensors(path);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->tensors.size(), 5u);
  std::map<std::string, at::Tensor> got(read->tensors.begin(), read->tensors.end());
  EXPECT_TRUE(at::equal(got["f"], f));
  EXPECT_TRUE(at::equal(got["i"], i));
  EXPECT_EQ(got["i"].scalar_type(), at::kLong);
  EXPECT_EQ(got["s"].dim(), 0);
  EXPECT_EQ(got["s"].item<float>(), 2.5f);
  EXPECT_EQ(got["e"].sizes(), empty.sizes());
  EXPECT_TRUE(at::equal(got["t"], strided));
  EXPECT_EQ(read->metadata.at("stage"), "1");
  std::filesystem::remove(path);
}

TEST(SafetensorsTest, WriterRejectsBadInput) {
  const std::string path = TempPath("bad_write.safetensors");
  Status s = WriteSafetensors(path, {{"d", at::zeros({2}, at::kDouble)}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'d'"), std::string::npos) << s.message();
  s = WriteSafetensors(path, {{"a", at::zeros({2})}, {"a", at::zeros({2})}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = WriteSafetensors("/nonexistent_dir_pw/x.safetensors", {{"a", at::zeros({2})}});
  EXPECT_EQ(s.code(), StatusCode::kIoError);
}

TEST(SafetensorsTest, MalformedFilesNameFileAndTensor) {
  const std::string path = TempPath("bad.safetensors");
  const std::string floats(8, '\0');  // two F32 zeros
  struct Bad {
    const char* what;
    uint64_t length;  // 0: the header's size
    std::string header;
    std::string data;
    const char* expect;  // substring of the message
  };
  const std::vector<Bad> cases = {
      {"huge length", 1ull << 40, "{}", "", "header length"},
      {"length past end", 100, "{}", "", "header length"},
      {"bad json", 0, "{\"a\": ", "", "not valid JSON"},
      {"not an object", 0, "[1, 2]", "", "not a JSON object"},
      {"missing fields", 0, R"({"w": {"dtype": "F32"}})", floats, "tensor 'w'"},
      {"bad dtype", 0, R"({"w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]}})", floats,
       "unsupported dtype"},
      {"negative dim", 0, R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})",
       floats, "not a size"},
      {"shape mismatch", 0, R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})",
       floats, "needs 12 bytes"},
      {"offsets past end", 0, R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})",
       floats, "outside the data buffer"},
      {"offsets reversed", 0, R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}})",
       floats, "outside the data buffer"},
      {"bad offsets", 0, R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", floats,
       "data_offsets"},
      {"bad metadata", 0, R"({"__metadata__": {"k": 1}})", "", "__metadata__"},
  };
  for (const Bad& c : cases) {
    WriteRaw(path, c.length ? c.length : c.header.size(), c.header, c.data);
    Result<SafetensorsContents> r = ReadSafetensors(path);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.what;
    EXPECT_NE(r.status().message().find(path), std::string::npos) << c.what;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos)
        << c.what << ": " << r.status().message();
    if (c.header.find("\"w\"") != std::string::npos) {
      EXPECT_NE(r.status().message().find("'w'"), std::string::npos) << c.what;
    }
  }
  {  // shorter than the length field
    std::ofstream(path, std::ios::binary | std::ios::trunc) << "abc";
    Result<SafetensorsContents> r = ReadSafetensors(path);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("shorter than"), std::string::npos);
  }
  std::filesystem::remove(path);
  EXPECT_EQ(ReadSafetensors(path).status().code(), StatusCode::kNotFound);
}

// --- resume on local ranks -------------------------------------------------

std::string CorpusPath() {
  static const std::string path = [] {
    const char* words[] = {"stages", "send", "activations", "and", "the", "optimizer",
                           "keeps", "moments", "in", "a", "checkpoint", "file."};
    std::string text;
    uint64_t x = 7;
    while (text.size() < 30000) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      text += words[(x >> 33) % (sizeof(words) / sizeof(words[0]))];
      text += ((x >> 20) % 9 == 0) ? "\n" : " ";
    }
    std::string p = TempPath("corpus.txt");
    std::ofstream(p) << text;
    return p;
  }();
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

TEST(CheckpointTest, MissingManifestIsNotFound) {
  Result<CheckpointManifest> m = ReadCheckpointManifest(TempPath("no_such_ckpt"));
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace pw
