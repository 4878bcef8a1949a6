// The infer side task against the single-process reference
// (ReferenceGreedy: the full sequence recomputed for every token): what it
// writes is what a dedicated greedy run generates, a task stopped part way
// leaves whole lines only and the next one finishes the file without
// redoing a prompt, and bad options fail before any work.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "harvest/side_task.h"
#include "harvest/side_task_test_util.h"
#include "infer/engine.h"
#include "infer/infer_settings.h"
#include "infer/infer_test_util.h"

namespace pw {
namespace {

namespace fs = std::filesystem;

struct InferTaskFiles {
  fs::path dir, prompts, out;
  InferTaskFiles() {
    dir = fs::temp_directory_path() / ("pw_infer_task_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    prompts = dir / "prompts.jsonl";
    out = dir / "out.jsonl";
    std::ofstream(prompts) << R"({"id": "a", "prompt": "Once upon", "max_tokens": 1}
{"id": "b", "prompt": "The pipeline has a bubble"}
not json
{"id": "c", "prompt": "x", "max_tokens": 9}
{"id": "d", "prompt": "Side tasks fill idle time on every rank of the job"}
{"id": "e", "prompt": "Weights"}
)";
  }
  ~InferTaskFiles() { fs::remove_all(dir); }
  std::string Spec() const {
    return "infer:prompts=" + prompts.string() + ",out=" + out.string() + ",max_tokens=6,max_batch_tokens=8";
  }
};

// id -> tokens of every line of the results file; each id once.
std::map<std::string, std::vector<int64_t>> ReadResults(const fs::path& path) {
  std::map<std::string, std::vector<int64_t>> results;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(results.count(j.at("id")), 0u) << "written twice: " << line;
    results[j.at("id")] = j.at("tokens").get<std::vector<int64_t>>();
  }
  return results;
}

TEST(InferTaskTest, WritesWhatTheReferenceGeneratesAndResumesAfterAStop) {
  InferTaskFiles files;
  std::unique_ptr<SideTask> first = MakeTestTask(files.Spec());
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->unit(), "tokens");
  ASSERT_TRUE(first->Setup().ok());
  double work = 0;
  for (int i = 0; i < 3; ++i) {
    Result<double> w = first->Step();
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    work += *w;
  }
  EXPECT_GT(work, 0);
  EXPECT_FALSE(first->Done());
  first.reset();  // stopped part way, as when its training run ends
  const size_t after_stop = ReadResults(files.out).size();
  EXPECT_GE(after_stop, 1u) << "'a' wants one token: done after the first pass";
  EXPECT_LT(after_stop, 5u);

  std::unique_ptr<SideTask> second = MakeTestTask(files.Spec());
  ASSERT_TRUE(second->Setup().ok());
  EXPECT_EQ(MetricOf(*second, "prompts_done_before"), static_cast<double>(after_stop));
  for (int i = 0; !second->Done(); ++i) {
    ASSERT_LT(i, 200);
    Result<double> w = second->Step();
    ASSERT_TRUE(w.ok()) << w.status().ToString();
  }
  EXPECT_EQ(MetricOf(*second, "prompts_left"), 0);

  // The independent reference: the same weights, each prompt alone.
  InferJob job;
  job.prompts = files.prompts.string();
  job.out = files.out.string();
  Result<InferSettings> settings = ResolveInferJob(job);
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  const std::map<std::string, std::pair<std::string, int>> prompts = {
      {"a", {"Once upon", 1}},
      {"b", {"The pipeline has a bubble", 6}},
      {"c", {"x", 9}},
      {"d", {"Side tasks fill idle time on every rank of the job", 6}},
      {"e", {"Weights", 6}}};
  const auto results = ReadResults(files.out);
  ASSERT_EQ(results.size(), prompts.size());
  for (const auto& [id, prompt] : prompts) {
    GenerationRequest r;
    r.id = id;
    r.prompt.assign(prompt.first.begin(), prompt.first.end());
    r.max_new_tokens = prompt.second;
    EXPECT_EQ(results.at(id), ReferenceGreedy(settings->source, r)) << id;
  }

  // Nothing left: a third task is done at once and writes nothing.
  std::unique_ptr<SideTask> third = MakeTestTask(files.Spec());
  ASSERT_TRUE(third->Setup().ok());
  EXPECT_TRUE(third->Done());
  EXPECT_EQ(ReadResults(files.out).size(), prompts.size());
}

TEST(InferTaskTest, BadOptionsFailBeforeAnyWork) {
  InferTaskFiles files;
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases = {
      {"infer:out=" + files.out.string(), "prompts= and out= are required"},
      {"infer:prompts=" + files.prompts.string() + ",out=" + files.out.string() + ",mode=cas",
       "unknown option 'mode'"},
      {"infer:prompts=" + files.prompts.string() + ",out=" + files.out.string() + ",max_tokens=0", "max_tokens"},
      {"infer:prompts=" + files.prompts.string() + ",out=" + (files.dir / "no/such/dir/o.jsonl").string(),
       "side task infer"},
  };
  for (const Case& c : cases) {
    // Parsing a spec makes the task to check its options (what --side-task
    // does before any rank starts), so the error comes from there.
    Result<SideTaskSpec> spec = ParseSideTaskSpec(c.text);
    ASSERT_FALSE(spec.ok()) << c.text;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << spec.status().ToString();
    EXPECT_NE(spec.status().message().find(c.expect), std::string::npos)
        << c.text << " -> " << spec.status().message();
  }
  EXPECT_FALSE(fs::exists(files.out)) << "nothing written";
}

}  // namespace
}  // namespace pw
