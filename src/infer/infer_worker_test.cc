// BuildRequests and ToResultRecord with a tokenizer: text prompts encoded
// (BOS first when the tokenizer asks), token-id prompts used as given, stop
// at the tokenizer's stop ids unless ignore_eos, ids outside the model's
// vocabulary failing their request alone, results decoded without
// special tokens; and "prompt_ids" in the prompt file.
#include "infer/infer_worker.h"

#include <gtest/gtest.h>

#include "infer/infer_test_util.h"

namespace pw {
namespace {

// Every character c is id c + 10; BOS 1, EOS 2 and end-of-turn 3 are special.
class TestTokenizer final : public Tokenizer {
 public:
  TestTokenizer() { set_special(SpecialTokens{1, 2, {2, 3}, true}); }
  std::optional<int32_t> TokenId(const std::string&) const override { return std::nullopt; }
  int64_t vocab_size() const override { return 266; }
  std::string_view kind() const override { return "test"; }

 protected:
  Result<std::vector<int32_t>> EncodeText(std::string_view text) const override {
    std::vector<int32_t> ids;
    for (char c : text) ids.push_back(static_cast<unsigned char>(c) + 10);
    return ids;
  }
  Result<std::string> DecodeIds(std::span<const int32_t> ids, bool skip_special) const override {
    std::string out;
    for (int32_t id : ids) {
      if (id < 10) {
        if (!skip_special) out += "<" + std::to_string(id) + ">";
      } else {
        out.push_back(static_cast<char>(id - 10));
      }
    }
    return out;
  }
};

TEST(BuildRequests, EncodesTextWithBosTakesIdsAsGivenAndStopsAtStopIds) {
  ModelConfig config = SmallTestConfig(32, 1, 16);
  config.vocab_size = 120;  // ASCII letters fit (c + 10 < 120), Latin-1's bytes do not
  PromptFile file = ParsePrompts(
      "{\"id\": \"t\", \"prompt\": \"ab\"}\n"
      "{\"id\": \"i\", \"prompt_ids\": [5, 6, 7], \"max_tokens\": 3}\n"
      "{\"id\": \"far\", \"prompt_ids\": [300]}\n"
      "{\"id\": \"wide\", \"prompt\": \"\\u00ff\"}\n",
      "p.jsonl");
  ASSERT_TRUE(file.problems.empty());
  InferJob job;
  job.max_tokens = 9;
  std::vector<ResultRecord> rejected;
  TestTokenizer tokenizer;
  std::vector<GenerationRequest> requests = BuildRequests(file.prompts, DoneSet{}, job, config, tokenizer, &rejected);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].prompt, (std::vector<int64_t>{1, 'a' + 10, 'b' + 10}));
  EXPECT_EQ(requests[0].stop_tokens, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(requests[0].max_new_tokens, 9);
  EXPECT_EQ(requests[1].prompt, (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(requests[1].max_new_tokens, 3);
  // Ids past the model's 120 fail their request alone, naming the line.
  ASSERT_EQ(rejected.size(), 2u);
  EXPECT_EQ(rejected[0].id, "far");
  EXPECT_NE(rejected[0].error.find("line 3: prompt token 0 is 300, outside the model's vocabulary of 120"),
            std::string::npos)
      << rejected[0].error;
  EXPECT_EQ(rejected[1].id, "wide");  // U+00FF is bytes C3 BF: ids 205 and 201

  job.ignore_eos = true;
  rejected.clear();
  requests = BuildRequests(file.prompts, DoneSet{}, job, config, tokenizer, &rejected);
  EXPECT_TRUE(requests[0].stop_tokens.empty());
}

TEST(BuildRequests, APromptLongerThanTheContextFailsAloneNamingItsLine) {
  const ModelConfig config = SmallTestConfig(32, 1, 16);  // context 16
  PromptFile file = ParsePrompts("{\"prompt\": \"short\"}\n{\"prompt\": \"seventeen bytes!!\"}\n", "p.jsonl");
  InferJob job;
  auto bytes = LoadModelTokenizer("", "", config);
  ASSERT_TRUE(bytes.ok());
  std::vector<ResultRecord> rejected;
  std::vector<GenerationRequest> requests = BuildRequests(file.prompts, DoneSet{}, job, config, **bytes, &rejected);
  EXPECT_EQ(requests.size(), 1u);
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_NE(rejected[0].error.find("line 2: prompt of 17 tokens exceeds the model's context of 16"), std::string::npos)
      << rejected[0].error;
}

TEST(BuildRequests, TheByteModelStopsAtEndByte) {
  const ModelConfig config = SmallTestConfig(32, 1, 16);
  PromptFile file = ParsePrompts("{\"prompt\": \"ab\"}\n", "p.jsonl");
  InferJob job;
  job.end_byte = 10;
  auto bytes = LoadModelTokenizer("", "", config);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  std::vector<GenerationRequest> requests = BuildRequests(file.prompts, DoneSet{}, job, config, **bytes, nullptr);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].prompt, (std::vector<int64_t>{'a', 'b'}));
  EXPECT_EQ(requests[0].stop_tokens, std::vector<int64_t>{10});
}

TEST(LoadModelTokenizer, ANonByteModelWithoutATokenizerIsRefused) {
  ModelConfig config = SmallTestConfig(32, 1, 16);
  config.vocab_size = 1000;
  auto t = LoadModelTokenizer("", "", config);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("--tokenizer"), std::string::npos) << t.status().ToString();
}

TEST(ToResultRecord, DecodesWithoutSpecialTokens) {
  GenerationResult g;
  g.id = "x";
  g.tokens = {'h' + 10, 'i' + 10, 2};
  g.finish_reason = FinishReason::kEnd;
  TestTokenizer tokenizer;
  const ResultRecord r = ToResultRecord(g, 0, false, tokenizer);
  EXPECT_EQ(r.text, "hi");
  EXPECT_EQ(r.tokens, g.tokens);
}

TEST(Samples, EachPromptBecomesItsSamplesAndResumeSkipsTheDoneOnes) {
  const ModelConfig config = SmallTestConfig(32, 1, 16);
  PromptFile file = ParsePrompts("{\"id\": \"a\", \"prompt\": \"x\"}\n{\"id\": \"b\", \"prompt\": \"y\", \"n\": 2}\n",
                                 "p.jsonl");
  ASSERT_TRUE(file.problems.empty());
  InferJob job;
  job.n = 3;
  auto bytes = LoadModelTokenizer("", "", config);
  ASSERT_TRUE(bytes.ok());
  // a: 3 samples (--n), b: 2 (its own "n"); a's sample 1 and b's sample 0 are done.
  DoneSet done = ParseDone("{\"id\":\"a\",\"sample\":1,\"finish_reason\":\"length\"}\n"
                           "{\"id\":\"b\",\"sample\":0,\"finish_reason\":\"length\"}\n");
  std::vector<GenerationRequest> requests = BuildRequests(file.prompts, done, job, config, **bytes, nullptr);
  std::vector<std::pair<std::string, int>> got;
  for (const GenerationRequest& r : requests) got.emplace_back(r.id, r.sample);
  EXPECT_EQ(got, (std::vector<std::pair<std::string, int>>{{"a", 0}, {"a", 2}, {"b", 1}}));
  EXPECT_EQ(requests[0].samples, 3);
  EXPECT_EQ(requests[2].samples, 2);
  EXPECT_EQ(PendingSamples(file.prompts, done, job), 3);
  // One sample per prompt keeps the plain id as its key (and no "sample" field).
  EXPECT_EQ(SampleKey("a", 0, 1), "a");
  GenerationResult g;
  g.id = "a";
  g.sample = 2;
  g.samples = 3;
  const std::string line = FormatResultLine(ToResultRecord(g, 0, false, **bytes));
  EXPECT_NE(line.find("\"sample\":2"), std::string::npos) << line;
  g.samples = 1;
  g.sample = 0;
  EXPECT_EQ(FormatResultLine(ToResultRecord(g, 0, false, **bytes)).find("\"sample\""), std::string::npos);
}

TEST(Samples, AnOutOfRangeNIsABadLine) {
  PromptFile f = ParsePrompts("{\"prompt\": \"x\", \"n\": 0}\n{\"prompt\": \"x\", \"n\": 65}\n", "p.jsonl");
  EXPECT_TRUE(f.prompts.empty());
  ASSERT_EQ(f.problems.size(), 2u);
  EXPECT_NE(f.problems[0].find("\"n\" (samples of this prompt) must be an integer from 1 to 64"), std::string::npos)
      << f.problems[0];
}

TEST(PromptIds, MalformedIdsAreReportedAndBothFormsRefused) {
  PromptFile f = ParsePrompts(
      "{\"id\": 1, \"prompt_ids\": []}\n"
      "{\"id\": 2, \"prompt_ids\": [1, -3]}\n"
      "{\"id\": 3, \"prompt_ids\": [1, \"a\"]}\n"
      "{\"id\": 4, \"prompt\": \"x\", \"prompt_ids\": [1]}\n",
      "p.jsonl");
  EXPECT_TRUE(f.prompts.empty());
  ASSERT_EQ(f.problems.size(), 4u);
  EXPECT_NE(f.problems[0].find("p.jsonl:1: \"prompt_ids\" must be a non-empty array"), std::string::npos) << f.problems[0];
  EXPECT_NE(f.problems[1].find("\"prompt_ids\"[1] must be a token id"), std::string::npos) << f.problems[1];
  EXPECT_NE(f.problems[2].find("\"prompt_ids\"[1] must be a token id"), std::string::npos) << f.problems[2];
  EXPECT_NE(f.problems[3].find("keep one"), std::string::npos) << f.problems[3];
}

// The KV cap: every sample of every prompt at its longest (prompt tokens
// bounded by ids, or bytes + 2, plus max_tokens, at most seq_len), in whole
// blocks, summed over the max_sequences largest.
TEST(KvBlocksWanted, CountsEachSampleAtItsLongestAndOnlyWhatRunsAtOnce) {
  ModelConfig config;
  config.seq_len = 100;
  InferJob job;
  job.block_size = 16;
  job.max_tokens = 10;
  job.n = 1;
  job.max_sequences = 256;
  std::vector<PromptRecord> prompts(3);
  prompts[0].prompt = "hello";                   // 5 + 2 + 10 = 17 positions: 2 blocks
  prompts[1].prompt_ids = {1, 2, 3};             // 3 + 10 = 13: 1 block, twice (n = 2)
  prompts[1].n = 2;
  prompts[2].prompt = std::string(200, 'x');     // capped at seq_len 100: 7 blocks
  prompts[2].max_tokens = 50;
  EXPECT_EQ(KvBlocksWanted(prompts, job, config), 2 + 1 + 1 + 7);
  job.max_sequences = 2;  // at most the two largest at once
  EXPECT_EQ(KvBlocksWanted(prompts, job, config), 7 + 2);
  EXPECT_EQ(KvBlocksWanted({}, job, config), 0);
}

TEST(ResolveMemoryBudget, AutoSharesTheHostsAvailableMemoryAmongTheRanks) {
  std::string note;
  const int64_t available = int64_t{10} << 30;
  Result<int64_t> two = ResolveMemoryBudget("auto", 2, available, &note);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*two, static_cast<int64_t>(kAutoBudgetShare * static_cast<double>(available) / 2));
  EXPECT_NE(note.find("over 2 ranks"), std::string::npos) << note;
  Result<int64_t> given = ResolveMemoryBudget("64MiB", 2, available, &note);
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(*given, int64_t{64} << 20);
  EXPECT_TRUE(note.empty());
  Result<int64_t> bad = ResolveMemoryBudget("lots", 1, available, &note);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("or auto"), std::string::npos) << bad.status().ToString();
  EXPECT_FALSE(ResolveMemoryBudget("auto", 1, 0, &note).ok()) << "no available memory: say so";
}

}  // namespace
}  // namespace pw
