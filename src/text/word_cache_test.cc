// WordCache keeps short words until it is full, then keeps what it has (the
// common words, met first, stay); long words are never kept.
#include "text/word_cache.h"

#include <gtest/gtest.h>

#include <string>

namespace pw {
namespace {

using Ids = std::vector<int32_t>;

TEST(WordCache, KeepsShortWordsUntilFullAndNeverStartsOver) {
  WordCache cache(/*capacity=*/2);
  Ids out;
  EXPECT_FALSE(cache.Lookup("the", out));
  cache.Insert("the", {1});
  cache.Insert("of", {2, 3});
  cache.Insert("zebra", {4});  // full: not kept, and "the" and "of" stay
  EXPECT_TRUE(cache.Lookup("the", out));
  EXPECT_TRUE(cache.Lookup("of", out));
  EXPECT_FALSE(cache.Lookup("zebra", out));
  EXPECT_EQ(out, (Ids{1, 2, 3}));
}

TEST(WordCache, LongWordsAreNotKept) {
  WordCache cache;
  const std::string longest(WordCache::kMaxWordBytes, 'x'), longer(WordCache::kMaxWordBytes + 1, 'x');
  cache.Insert(longest, {7});
  cache.Insert(longer, {8});
  Ids out;
  EXPECT_TRUE(cache.Lookup(longest, out));
  EXPECT_FALSE(cache.Lookup(longer, out));
  EXPECT_EQ(out, (Ids{7}));
}

}  // namespace
}  // namespace pw
