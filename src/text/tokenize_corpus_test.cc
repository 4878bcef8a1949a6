// TokenizeCorpus with GPT-2's tables: documents become [ids..., EOS] in file
// order across shards, the validation shard comes first, a stopped run
// resumes to byte-identical shards, and bad input names file and line.
#include "text/tokenize_corpus.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "text/text_test_util.h"
#include "text/token_shard.h"

namespace pw {
namespace {

namespace fs = std::filesystem;
using Ids = std::vector<int32_t>;

class TokenizeCorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = FreshTestDirectory("pw_tokenize_");
    fs::create_directories(root_ / "in" / "sub");
    gpt2_ = ExampleTokenizer("gpt2");
    ASSERT_NE(gpt2_, nullptr);
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

  // Every token of the shards under `dir`, val first, then train in order.
  Ids ReadAll(const fs::path& dir, const std::vector<std::string>& names) {
    Ids all;
    for (const std::string& name : names) {
      auto shard = TokenShard::Open((dir / name).string());
      EXPECT_TRUE(shard.ok()) << shard.status().ToString();
      for (int64_t i = 0; shard.ok() && i < shard->size(); ++i) all.push_back(static_cast<int32_t>((*shard)[i]));
    }
    return all;
  }

  Ids Expected(const std::vector<std::string>& docs) {
    Ids all;
    for (const std::string& d : docs) {
      Ids ids = gpt2_->Encode(d).value();
      all.insert(all.end(), ids.begin(), ids.end());
      all.push_back(50256);
    }
    return all;
  }

  fs::path root_;
  std::unique_ptr<Tokenizer> gpt2_;
};

TEST_F(TokenizeCorpusTest, DocumentsEndInEosAcrossFilesAndJsonl) {
  Write(root_ / "in" / "a.txt", "Hello world\n  and more.\n");
  Write(root_ / "in" / "sub" / "b.jsonl", "{\"text\": \"first doc\"}\n\n{\"text\": \"second 🚀\", \"id\": 2}\n");
  Write(root_ / "in" / ".hidden.txt", "skipped");
  TokenizeOptions options;
  options.inputs = {(root_ / "in").string()};
  options.out_dir = (root_ / "out").string();
  options.tokenizer_name = "gpt2";
  auto summary = TokenizeCorpus(options, *gpt2_, nullptr);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->totals.documents, 3);
  ASSERT_EQ(summary->shards, std::vector<std::string>{"train_000000.bin"});
  EXPECT_EQ(ReadAll(root_ / "out", summary->shards),
            Expected({"Hello world\n  and more.\n", "first doc", "second 🚀"}));
  // Run again: complete already, nothing rewritten.
  auto again = TokenizeCorpus(options, *gpt2_, nullptr);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->already_done);
  EXPECT_EQ(again->bytes_this_run, 0);
}

TEST_F(TokenizeCorpusTest, StoppedRunResumesToIdenticalShards) {
  // Many small JSONL files, so chunks (and shard ends) are frequent.
  std::vector<std::string> docs;
  for (int f = 0; f < 12; ++f) {
    std::ostringstream jsonl;
    for (int d = 0; d < 20; ++d) {
      docs.push_back("document " + std::to_string(f) + "." + std::to_string(d) + " says naïve things, " +
                     std::string(static_cast<size_t>(d % 5), ' ') + "twice.");
      jsonl << "{\"body\": \"" << docs.back() << "\"}\n";
    }
    Write(root_ / "in" / ("part" + std::to_string(100 + f) + ".jsonl"), jsonl.str());
  }
  TokenizeOptions options;
  options.inputs = {(root_ / "in").string()};
  options.field = "body";
  options.shard_tokens = 300;
  options.val_tokens = 100;
  options.tokenizer_name = "gpt2";
  options.out_dir = (root_ / "whole").string();
  auto whole = TokenizeCorpus(options, *gpt2_, nullptr);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  ASSERT_GE(whole->shards.size(), 4u);
  EXPECT_EQ(whole->shards[0], "val_000000.bin");
  EXPECT_EQ(whole->shards[1], "train_000000.bin");
  EXPECT_EQ(ReadAll(root_ / "whole", whole->shards), Expected(docs));

  options.out_dir = (root_ / "resumed").string();
  int calls = 0;
  auto stopped = TokenizeCorpus(options, *gpt2_, [&](const TokenizeProgress& p) { return ++calls < 5 && p.shards < 3; });
  ASSERT_TRUE(stopped.ok()) << stopped.status().ToString();
  EXPECT_TRUE(stopped->stopped);
  auto resumed = TokenizeCorpus(options, *gpt2_, nullptr);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_TRUE(resumed->resumed);
  EXPECT_FALSE(resumed->stopped);
  ASSERT_EQ(resumed->shards, whole->shards);
  for (const std::string& name : whole->shards) {
    std::ifstream a(root_ / "whole" / name, std::ios::binary), b(root_ / "resumed" / name, std::ios::binary);
    std::stringstream sa, sb;
    sa << a.rdbuf();
    sb << b.rdbuf();
    EXPECT_EQ(sa.str(), sb.str()) << name;
  }

  // Other options over the same output are refused, not mixed in.
  options.shard_tokens = 400;
  auto other = TokenizeCorpus(options, *gpt2_, nullptr);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("different tokenize run"), std::string::npos) << other.status().ToString();
}

TEST_F(TokenizeCorpusTest, BadInputNamesFileAndLine) {
  Write(root_ / "in" / "ok.jsonl", "{\"text\": \"fine\"}\n{\"txt\": \"wrong key\"}\n");
  TokenizeOptions options;
  options.inputs = {(root_ / "in" / "ok.jsonl").string()};
  options.out_dir = (root_ / "out").string();
  auto bad = TokenizeCorpus(options, *gpt2_, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ok.jsonl:2: no string field \"text\""), std::string::npos)
      << bad.status().ToString();

  Write(root_ / "in" / "latin1.txt", "caf\xE9\n");
  options.inputs = {(root_ / "in" / "latin1.txt").string()};
  options.out_dir = (root_ / "out2").string();
  bad = TokenizeCorpus(options, *gpt2_, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("latin1.txt"), std::string::npos) << bad.status().ToString();
  EXPECT_NE(bad.status().message().find("latin1.txt: not valid UTF-8 at byte 3"), std::string::npos) << bad.status().ToString();

  options.inputs = {(root_ / "missing.txt").string()};
  EXPECT_EQ(TokenizeCorpus(options, *gpt2_, nullptr).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace pw
