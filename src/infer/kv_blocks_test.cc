// KvBlockManager: block tables with reference-counted sharing and the
// exact, content-addressed prefix index — what maps (same tokens after the
// same prefix, whole blocks only, within the cap), what never does (equal
// tokens after a different prefix, a partial block, anything after
// Forget), and how cached blocks are kept and evicted.
#include "infer/kv_blocks.h"

#include <gtest/gtest.h>

#include <numeric>

namespace pw {
namespace {

constexpr int kBs = 4;

std::vector<int64_t> Tokens(int n, int offset = 0) {
  std::vector<int64_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), offset);
  return t;
}

// A sequence that computed `tokens` (all positions reserved and committed).
void Compute(KvBlockManager& m, int64_t seq, const std::vector<int64_t>& tokens) {
  ASSERT_TRUE(m.Reserve(seq, static_cast<int64_t>(tokens.size())));
  m.Commit(seq, tokens, static_cast<int64_t>(tokens.size()));
}

TEST(KvBlockManagerTest, ASequenceMapsTheFullBlocksAnotherComputedAndSharesThem) {
  KvBlockManager m(16, kBs);
  const std::vector<int64_t> a = Tokens(10);  // blocks [0,4) [4,8) full, [8,10) partial
  Compute(m, 1, a);
  EXPECT_EQ(m.stats().cached_blocks, 2);
  std::vector<int64_t> b = Tokens(10);
  b[9] = 99;  // differs only in the partial block
  EXPECT_EQ(m.MapCachedPrefix(2, b, 9), 8);
  EXPECT_EQ(m.blocks(2), std::vector<int64_t>(m.blocks(1).begin(), m.blocks(1).begin() + 2));
  ASSERT_TRUE(m.Reserve(2, 10));  // one block of its own for positions 8, 9
  EXPECT_NE(m.blocks(2)[2], m.blocks(1)[2]);
  EXPECT_EQ(m.available_blocks(), 16 - 3 - 1);
  // A's release leaves the shared blocks with B; B's makes them cached,
  // still available to Reserve.
  m.Release(1);
  EXPECT_EQ(m.available_blocks(), 16 - 3);
  m.Release(2);
  EXPECT_EQ(m.available_blocks(), 16);
  EXPECT_EQ(m.MapCachedPrefix(3, a, 9), 8);  // still cached after both left
}

TEST(KvBlockManagerTest, OnlyTheSameTokensAfterTheSamePrefixMap) {
  KvBlockManager m(16, kBs);
  Compute(m, 1, Tokens(12));  // blocks 0..3, 4..7, 8..11
  std::vector<int64_t> other_start = Tokens(12);
  other_start[0] = 500;  // block 0 differs; blocks 1 and 2 hold equal tokens
  EXPECT_EQ(m.MapCachedPrefix(2, other_start, 12), 0);
  std::vector<int64_t> middle = Tokens(12);
  middle[5] = 500;  // block 1 differs: block 0 maps, block 2 (equal tokens) does not
  EXPECT_EQ(m.MapCachedPrefix(3, middle, 12), 4);
  // The cap: never past max_tokens, and only whole blocks below it.
  EXPECT_EQ(m.MapCachedPrefix(4, Tokens(12), 11), 8);
  EXPECT_EQ(m.MapCachedPrefix(5, Tokens(12), 3), 0);
  // A shorter sequence's tokens bound the walk too.
  EXPECT_EQ(m.MapCachedPrefix(6, Tokens(6), 100), 4);
}

TEST(KvBlockManagerTest, CommitIndexesOnlyFullBlocksUpToN) {
  KvBlockManager m(16, kBs);
  const std::vector<int64_t> t = Tokens(12);
  ASSERT_TRUE(m.Reserve(1, 12));
  m.Commit(1, t, 7);  // one full block so far (a chunk of a longer prompt)
  EXPECT_EQ(m.stats().cached_blocks, 1);
  EXPECT_EQ(m.MapCachedPrefix(2, t, 12), 4);
  m.Commit(1, t, 12);
  EXPECT_EQ(m.stats().cached_blocks, 3);
  EXPECT_EQ(m.MapCachedPrefix(3, t, 12), 12);
}

TEST(KvBlockManagerTest, AnEqualBlockComputedTwiceStaysPrivateAndIsFreed) {
  KvBlockManager m(8, kBs);
  const std::vector<int64_t> t = Tokens(8);
  Compute(m, 1, t);
  Compute(m, 2, t);  // the same prompt, computed at once (admitted together)
  EXPECT_EQ(m.stats().cached_blocks, 2);
  // The second copy's chain follows the indexed blocks: a third sequence
  // extending it maps through them.
  std::vector<int64_t> longer = Tokens(12);
  ASSERT_TRUE(m.Reserve(2, 12));
  m.Commit(2, longer, 12);
  EXPECT_EQ(m.stats().cached_blocks, 3);
  EXPECT_EQ(m.MapCachedPrefix(3, longer, 12), 12);
  m.Release(3);
  m.Release(2);
  m.Release(1);
  // Everything available again: 3 cached, the rest (the private copies) free.
  EXPECT_EQ(m.available_blocks(), 8);
  EXPECT_EQ(m.stats().cached_blocks, 3);
}

TEST(KvBlockManagerTest, CachedBlocksAreEvictedLeastRecentlyReleasedAndLastBlockFirst) {
  KvBlockManager m(6, kBs);
  Compute(m, 1, Tokens(12));       // 3 blocks
  Compute(m, 2, Tokens(12, 100));  // 3 more: the cache is full
  m.Release(1);                    // released first: evicted first
  m.Release(2);
  EXPECT_EQ(m.available_blocks(), 6);
  ASSERT_TRUE(m.Reserve(3, 4));  // takes one cached block: sequence 1's last
  EXPECT_EQ(m.stats().evictions, 1);
  EXPECT_EQ(m.MapCachedPrefix(4, Tokens(12), 12), 8);  // its prefix survived
  m.Release(4);  // its two blocks are now the most recently released
  ASSERT_TRUE(m.Reserve(3, 4 * 4));  // three more: sequence 2's, the least recent
  EXPECT_EQ(m.stats().evictions, 4);
  EXPECT_EQ(m.MapCachedPrefix(5, Tokens(12, 100), 12), 0);
  EXPECT_EQ(m.MapCachedPrefix(6, Tokens(12), 12), 8);
  EXPECT_FALSE(m.Reserve(7, 4));  // nothing available: nothing taken
  EXPECT_FALSE(m.Has(7));
  EXPECT_EQ(m.available_blocks(), 0);
}

TEST(KvBlockManagerTest, ForgetDropsTheIndexAndRunningSequencesIndexNothingMore) {
  KvBlockManager m(8, kBs);
  Compute(m, 1, Tokens(8));
  ASSERT_TRUE(m.Reserve(2, 4));
  m.Release(2);
  m.Release(1);
  ASSERT_TRUE(m.Reserve(3, 8));
  m.Forget();
  EXPECT_EQ(m.stats().cached_blocks, 0);
  EXPECT_EQ(m.MapCachedPrefix(4, Tokens(8), 8), 0);
  m.Commit(3, Tokens(8, 7), 8);  // its chain was lost: nothing indexed
  EXPECT_EQ(m.stats().cached_blocks, 0);
  m.Release(3);
  m.Release(4);
  EXPECT_EQ(m.available_blocks(), 8);
}

TEST(KvBlockManagerTest, AddedBlocksAreTakenAfterTheFreeOnes) {
  KvBlockManager m(2, kBs);
  m.AddBlocks(2);
  EXPECT_EQ(m.num_blocks(), 4);
  ASSERT_TRUE(m.Reserve(1, 16));
  EXPECT_EQ(m.blocks(1), (std::vector<int64_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace pw
