// What the text/ tests share: a fresh scratch directory per test, and the
// real tokenizers (fetched by scripts/fetch-tokenizers.sh into
// examples/tokenizers/) checked against ids an independent encoder gave.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer_loader.h"

namespace pw {

// An empty directory named after this process and the running test
// (removed first if a crashed run left it). The caller removes it.
inline std::filesystem::path FreshTestDirectory(const std::string& prefix) {
  const auto dir = std::filesystem::temp_directory_path() /
                   (prefix + std::to_string(::getpid()) + "_" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// One text and the reference encoder's ids for it.
struct ReferenceIds {
  const char* text;
  std::vector<int32_t> ids;
};

// examples/tokenizers/<name>, or null (with a failure saying how to fetch it).
inline std::unique_ptr<Tokenizer> ExampleTokenizer(const std::string& name) {
  auto t = LoadTokenizer(std::string(PW_SOURCE_DIR) + "/examples/tokenizers/" + name);
  EXPECT_TRUE(t.ok()) << t.status().ToString() << " (run scripts/fetch-tokenizers.sh)";
  return t.ok() ? std::move(t.value()) : nullptr;
}

// Every case encodes to its reference ids and decodes back to its text.
inline void ExpectReferenceIds(const Tokenizer& tokenizer, const std::vector<ReferenceIds>& cases) {
  for (const ReferenceIds& c : cases) {
    auto ids = tokenizer.Encode(c.text);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    EXPECT_EQ(ids.value(), c.ids) << c.text;
    EXPECT_EQ(tokenizer.Decode(ids.value()).value(), c.text);
  }
}

}  // namespace pw
