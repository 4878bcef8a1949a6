#include "infer/prompts_io.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace pw {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("pw_prompts_io_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(PromptsIo, ParsesIdsPromptsAndMaxTokens) {
  const std::string text =
      "{\"id\": \"a\", \"prompt\": \"hello\"}\n"
      "\n"
      "{\"prompt\": \"no id\", \"max_tokens\": 5}\n"
      "{\"id\": 42, \"prompt\": \"n\\u00e9\"}\r\n";
  PromptFile f = ParsePrompts(text, "p.jsonl");
  EXPECT_TRUE(f.problems.empty());
  ASSERT_EQ(f.prompts.size(), 3u);
  EXPECT_EQ(f.lines, 4);
  EXPECT_EQ(f.prompts[0].id, "a");
  EXPECT_EQ(f.prompts[0].prompt, "hello");
  EXPECT_EQ(f.prompts[0].max_tokens, 0);
  EXPECT_EQ(f.prompts[0].index, 0);
  EXPECT_EQ(f.prompts[1].id, "3");  // default: the line number
  EXPECT_EQ(f.prompts[1].line, 3);
  EXPECT_EQ(f.prompts[1].max_tokens, 5);
  EXPECT_EQ(f.prompts[1].index, 1);
  EXPECT_EQ(f.prompts[2].id, "42");
  EXPECT_EQ(f.prompts[2].prompt, "n\xc3\xa9");  // UTF-8 bytes are the tokens
}

TEST(PromptsIo, ReportsEachBadLineWithItsNumberAndKeepsTheRest) {
  const std::string text =
      "{\"id\": 1, \"prompt\": \"ok\"}\n"        // 1
      "{\"id\": 2, \"prompt\": \"broken\n"       // 2 bad JSON
      "[1, 2]\n"                                 // 3 not an object
      "{\"id\": 4}\n"                            // 4 missing prompt
      "{\"id\": 5, \"prompt\": 7}\n"             // 5 prompt not a string
      "{\"id\": 1.5, \"prompt\": \"x\"}\n"       // 6 id not string/int
      "{\"id\": 7, \"prompt\": \"x\", \"max_tokens\": 0}\n"  // 7 bad max_tokens
      "{\"id\": 1, \"prompt\": \"dup\"}\n"       // 8 duplicate id
      "{\"id\": 9, \"prompt\": \"\"}\n"          // 9 empty prompt
      "{\"id\": 10, \"prompt\": \"fine\"}\n";    // 10
  PromptFile f = ParsePrompts(text, "in.jsonl");
  ASSERT_EQ(f.prompts.size(), 2u);
  EXPECT_EQ(f.prompts[0].id, "1");
  EXPECT_EQ(f.prompts[1].id, "10");
  EXPECT_EQ(f.prompts[1].index, 1);  // index counts valid prompts
  ASSERT_EQ(f.problems.size(), 8u);
  const char* expected[] = {"in.jsonl:2: not valid JSON", "in.jsonl:3: expected a JSON object",
                            "in.jsonl:4: missing \"prompt\"", "in.jsonl:5: \"prompt\" must be a string",
                            "in.jsonl:6: \"id\" must be", "in.jsonl:7: \"max_tokens\" must be",
                            "in.jsonl:8: duplicate id \"1\" (first on line 1)", "in.jsonl:9: \"prompt\" is empty"};
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(f.problems[i].rfind(expected[i], 0), 0u) << f.problems[i];
  }
  // Each message says how to fix it (after a ';').
  for (const std::string& p : f.problems) EXPECT_NE(p.find("; "), std::string::npos) << p;
}

// A number beyond a double is nlohmann's out_of_range, not a parse_error:
// found by fuzzing, it escaped ParsePrompts and ended the whole job.
TEST(PromptsIo, ANumberBeyondADoubleIsABadLineNotACrash) {
  const std::string text =
      "{\"prompt\": \"a\", \"max_tokens\": 1e4000}\n"
      "{\"id\": \"ok\", \"prompt\": \"b\"}\n";
  PromptFile f = ParsePrompts(text, "in.jsonl");
  ASSERT_EQ(f.prompts.size(), 1u);
  EXPECT_EQ(f.prompts[0].id, "ok");
  ASSERT_EQ(f.problems.size(), 1u);
  EXPECT_EQ(f.problems[0].rfind("in.jsonl:1: not valid JSON (number overflow parsing '1e4000'); ", 0), 0u)
      << f.problems[0];
}

// A syntax error names its column and what the parser read last: from the
// parser's error position and token, not from the wording of its message.
TEST(PromptsIo, ABadLineNamesItsColumnAndToken) {
  const std::string text =
      "{\"prompt\": \"a\"]\n"
      "{\"prompt\": \"b\",\n";
  PromptFile f = ParsePrompts(text, "in.jsonl");
  ASSERT_EQ(f.problems.size(), 2u);
  EXPECT_EQ(f.problems[0].rfind("in.jsonl:1: not valid JSON at column 15 (near '\"a\"]'); ", 0), 0u) << f.problems[0];
  EXPECT_EQ(f.problems[1].rfind("in.jsonl:2: not valid JSON at column 16 (near '\"b\",'); ", 0), 0u)
      << f.problems[1];
}

TEST(PromptsIo, ReadPromptFileNamesAMissingFile) {
  Result<PromptFile> f = ReadPromptFile("/nonexistent/prompts.jsonl");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("/nonexistent/prompts.jsonl"), std::string::npos);
}

TEST(PromptsIo, ShareOfRankIsRoundRobinAndCoversEveryPromptOnce) {
  std::string text;
  for (int i = 0; i < 11; ++i) text += "{\"prompt\": \"p" + std::to_string(i) + "\"}\n";
  PromptFile f = ParsePrompts(text, "x");
  std::multiset<std::string> seen;
  for (int r = 0; r < 3; ++r) {
    auto share = ShareOfRank(f.prompts, r, 3);
    EXPECT_EQ(share.size(), r < 2 ? 4u : 3u);
    for (const auto& p : share) {
      EXPECT_EQ(p.index % 3, r);
      seen.insert(p.id);
    }
  }
  EXPECT_EQ(seen.size(), 11u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 11u);
}

TEST(PromptsIo, GroupByPrefixPutsPromptsThatStartAlikeTogetherAndKeepsTheirIndices) {
  // Two system prompts interleaved, an ids prompt, and two equal prompts.
  PromptFile f = ParsePrompts(
      "{\"id\": \"a1\", \"prompt\": \"SYS A: one\"}\n"
      "{\"id\": \"b1\", \"prompt\": \"SYS B: one\"}\n"
      "{\"id\": \"ids\", \"prompt_ids\": [3, 1]}\n"
      "{\"id\": \"a2\", \"prompt\": \"SYS A: two\"}\n"
      "{\"id\": \"b2\", \"prompt\": \"SYS B: two\"}\n"
      "{\"id\": \"a1-again\", \"prompt\": \"SYS A: one\"}\n",
      "x");
  ASSERT_EQ(f.prompts.size(), 6u);
  GroupByPrefix(f.prompts);
  std::vector<std::string> ids;
  for (const PromptRecord& p : f.prompts) ids.push_back(p.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"a1", "a1-again", "a2", "b1", "b2", "ids"}));
  EXPECT_EQ(f.prompts[1].index, 5);  // indices travel with their prompts
  EXPECT_EQ(f.prompts[5].index, 2);
}

TEST(PromptsIo, ResultLineRoundTripsAndReplacesInvalidUtf8) {
  ResultRecord r;
  r.id = "q\"1";
  r.index = 3;
  r.tokens = {'h', 'i', 0xff, '\n', 0xc3, 0xa9};
  r.text = TokensToBytes(r.tokens);  // what the byte tokenizer decodes them to
  r.finish_reason = FinishReason::kLength;
  r.prompt_tokens = 5;
  r.rank = 1;
  r.seconds = 0.25;
  const std::string line = FormatResultLine(r);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1);  // the text's newline is escaped
  nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["id"], "q\"1");
  EXPECT_EQ(j["index"], 3);
  EXPECT_EQ(j["text"], "hi\xef\xbf\xbd\n\xc3\xa9");  // 0xff -> U+FFFD, é kept
  EXPECT_EQ(j["tokens"].get<std::vector<int64_t>>(), r.tokens);
  EXPECT_EQ(j["finish_reason"], "length");
  EXPECT_FALSE(j.contains("error"));
  EXPECT_EQ(j["prompt_tokens"], 5);
  EXPECT_EQ(j["rank"], 1);
  EXPECT_DOUBLE_EQ(j["seconds"].get<double>(), 0.25);
  r.finish_reason = FinishReason::kError;
  r.error = "prompt too long";
  EXPECT_EQ(nlohmann::json::parse(FormatResultLine(r))["error"], "prompt too long");
}

TEST(PromptsIo, ParseDoneIgnoresTornTailAndInvalidLines) {
  ResultRecord a{.id = "a", .finish_reason = FinishReason::kLength}, b{.id = "b", .finish_reason = FinishReason::kEnd};
  std::string text = FormatResultLine(a) + "garbage\n" + FormatResultLine(b);
  std::string torn = FormatResultLine(ResultRecord{.id = "c", .finish_reason = FinishReason::kLength});
  text += torn.substr(0, torn.size() / 2);
  DoneSet d = ParseDone(text);
  EXPECT_EQ(d.ids, (std::unordered_set<std::string>{"a", "b"}));
  EXPECT_EQ(d.lines, 2);
  EXPECT_EQ(d.invalid_lines, 1);
  EXPECT_TRUE(d.torn_tail);
  EXPECT_FALSE(ParseDone(FormatResultLine(a)).torn_tail);
}

TEST(PromptsIo, WriterCutsTornTailThenAppendsWholeLines) {
  const std::string path = TempPath("torn.jsonl");
  const std::string line_a = FormatResultLine(ResultRecord{.id = "a", .finish_reason = FinishReason::kLength});
  const std::string kTorn = "{\"id\":\"b\",\"te";
  {
    std::ofstream out(path, std::ios::binary);
    out << line_a << kTorn;  // killed mid-line
  }
  Result<DoneSet> before = ReadDoneIds(path);
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->torn_tail);
  EXPECT_EQ(before->ids.size(), 1u);
  {
    Result<ResultWriter> w = ResultWriter::Open(path);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_EQ(w->truncated_bytes(), static_cast<int64_t>(kTorn.size()));
    ASSERT_TRUE(w->Append(ResultRecord{.id = "b", .finish_reason = FinishReason::kEnd}).ok());
  }
  const std::string after = Slurp(path);
  EXPECT_EQ(after, line_a + FormatResultLine(ResultRecord{.id = "b", .finish_reason = FinishReason::kEnd}));
  Result<DoneSet> d = ReadDoneIds(path);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->torn_tail);
  EXPECT_EQ(d->ids, (std::unordered_set<std::string>{"a", "b"}));
  std::filesystem::remove(path);
}

TEST(PromptsIo, WriterOnAFileWithoutNewlineAtAllCutsEverything) {
  const std::string path = TempPath("allTorn.jsonl");
  { std::ofstream(path, std::ios::binary) << "{\"id\":"; }
  Result<ResultWriter> w = ResultWriter::Open(path);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->truncated_bytes(), 6);
  EXPECT_EQ(std::filesystem::file_size(path), 0u);
  std::filesystem::remove(path);
}

TEST(PromptsIo, AbsentResultsFileIsEmptyAndBadDirectoryIsAnError) {
  Result<DoneSet> d = ReadDoneIds(TempPath("absent.jsonl"));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->ids.empty());
  Result<ResultWriter> w = ResultWriter::Open("/nonexistent-dir/out.jsonl");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("/nonexistent-dir/out.jsonl"), std::string::npos);
}

// Several processes append to one file at once: every line arrives whole.
TEST(PromptsIo, ConcurrentAppendersNeverInterleaveLines) {
  const std::string path = TempPath("shared.jsonl");
  std::filesystem::remove(path);
  constexpr int kProcs = 4, kLines = 200;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      Result<ResultWriter> w = ResultWriter::Open(path);
      if (!w.ok()) ::_exit(1);
      for (int i = 0; i < kLines; ++i) {
        ResultRecord r{.id = std::to_string(p) + "-" + std::to_string(i), .finish_reason = FinishReason::kLength};
        r.tokens.assign(100 + i, 'x');  // long lines make interleaving likely if unlocked
        if (!w->Append(r).ok()) ::_exit(2);
      }
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  DoneSet d = ParseDone(Slurp(path));
  EXPECT_EQ(d.lines, kProcs * kLines);
  EXPECT_EQ(d.invalid_lines, 0);
  EXPECT_FALSE(d.torn_tail);
  EXPECT_EQ(d.ids.size(), static_cast<size_t>(kProcs * kLines));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pw
