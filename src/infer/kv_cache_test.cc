// PagedKvCache against a dense reference: random interleaved writes of
// several sequences (chunks crossing block boundaries), releases and block
// reuse; reservation bookkeeping and running out of blocks.
#include "infer/kv_cache.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>

#include "core/fields.h"
#include "job/infer_job.h"

namespace pw {
namespace {

ModelConfig SmallConfig() {
  ModelConfig c;
  c.d_model = 8;
  c.n_layers = 3;
  c.n_heads = 2;
  c.seq_len = 64;
  return c;
}

TEST(KvCacheTest, Sizes) {
  const ModelConfig c = SmallConfig();
  EXPECT_EQ(PagedKvCache::BlockBytes(c, 4), 2 * 3 * 4 * 8 * 4);
  PagedKvCache cache(c, 10, 4);
  EXPECT_EQ(cache.bytes(), PagedKvCache::BytesFor(c, 10, 4));
  EXPECT_EQ(cache.capacity_tokens(), 40);
  EXPECT_EQ(cache.BlocksFor(0), 0);
  EXPECT_EQ(cache.BlocksFor(1), 1);
  EXPECT_EQ(cache.BlocksFor(4), 1);
  EXPECT_EQ(cache.BlocksFor(5), 2);
}

TEST(KvCacheTest, ReserveAndRelease) {
  PagedKvCache cache(SmallConfig(), 5, 4);
  EXPECT_TRUE(cache.Reserve(1, 9));  // 3 blocks
  EXPECT_EQ(cache.free_blocks(), 2);
  EXPECT_EQ(cache.reserved_tokens(1), 12);
  EXPECT_TRUE(cache.Reserve(1, 12));  // no more needed
  EXPECT_EQ(cache.free_blocks(), 2);
  EXPECT_FALSE(cache.Reserve(2, 12));  // 3 blocks > 2 free: nothing taken
  EXPECT_EQ(cache.free_blocks(), 2);
  EXPECT_EQ(cache.reserved_tokens(2), 0);
  EXPECT_FALSE(cache.Reserve(1, 21));  // growing seq 1 by 3 blocks fails too
  EXPECT_EQ(cache.reserved_tokens(1), 12);
  EXPECT_TRUE(cache.Reserve(2, 8));
  EXPECT_EQ(cache.free_blocks(), 0);
  cache.Release(1);
  EXPECT_EQ(cache.free_blocks(), 3);
  cache.Release(1);  // no-op
  cache.Release(99);
  EXPECT_EQ(cache.free_blocks(), 3);
  EXPECT_TRUE(cache.Reserve(3, 12));
  EXPECT_EQ(cache.free_blocks(), 0);

  PagedKvCache empty(SmallConfig(), 0, 4);
  EXPECT_FALSE(empty.Reserve(1, 1));
  EXPECT_TRUE(empty.Reserve(1, 0));
}

// Held-back blocks (auto's swap) are invisible until released, then usable
// like the others, and their contents are written like any block's.
TEST(KvCacheTest, HeldBackBlocksJoinWhenReleased) {
  const ModelConfig c = SmallConfig();
  PagedKvCache cache(c, 2, 4, /*held_back=*/3);
  EXPECT_EQ(cache.num_blocks(), 2);
  EXPECT_EQ(cache.held_back_blocks(), 3);
  EXPECT_EQ(cache.bytes(), PagedKvCache::BytesFor(c, 2, 4));
  EXPECT_TRUE(cache.Reserve(1, 8));
  EXPECT_FALSE(cache.Reserve(2, 1));  // the held-back blocks are not handed out
  cache.ReleaseHeldBack(2);  // part of them: the first two
  EXPECT_EQ(cache.num_blocks(), 4);
  EXPECT_EQ(cache.held_back_blocks(), 1);
  EXPECT_EQ(cache.free_blocks(), 2);
  cache.ReleaseHeldBack(5);  // more than are left: the rest
  EXPECT_EQ(cache.num_blocks(), 5);
  EXPECT_EQ(cache.held_back_blocks(), 0);
  EXPECT_EQ(cache.free_blocks(), 3);
  EXPECT_EQ(cache.bytes(), PagedKvCache::BytesFor(c, 5, 4));
  ASSERT_TRUE(cache.Reserve(2, 12));
  for (int64_t b : cache.blocks(2)) EXPECT_GE(b, 2);  // the released ones
  at::Tensor k = at::randn({12, c.d_model}), v = at::randn({12, c.d_model});
  cache.Write(2, 1, 0, k, v);
  auto [k_read, v_read] = cache.Read(2, 1, 12);
  EXPECT_TRUE(at::equal(k_read, k));
  EXPECT_TRUE(at::equal(v_read, v));
  cache.ReleaseHeldBack(1);  // none left: no-op
  EXPECT_EQ(cache.num_blocks(), 5);
}

// Writes random chunks to random sequences (blocks reused as sequences
// finish) and reads every sequence back against a dense copy; with fp16,
// the copy is LibTorch's own rounding (at::Tensor::to(kHalf)), so the
// cache's F16C conversion must round the same, bit for bit, including
// values too large or too small for fp16's normal range.
void CheckMatchesDenseReference(KvDtype dtype) {
  const ModelConfig c = SmallConfig();
  PagedKvCache cache(c, 24, 4, /*held_back=*/0, dtype);
  auto stored = [&](const at::Tensor& t) {
    return dtype == KvDtype::kFp16 ? t.to(at::kHalf).to(at::kFloat) : t;
  };
  std::mt19937 rng(42);
  struct Dense {
    std::vector<at::Tensor> k, v;  // per layer [len, d]
    int64_t written = 0, length = 0;
  };
  std::map<int64_t, Dense> dense;
  auto start = [&](int64_t seq, int64_t length) {
    ASSERT_TRUE(cache.Reserve(seq, length));
    Dense d;
    for (int l = 0; l < c.n_layers; ++l) {
      d.k.push_back(at::zeros({length, c.d_model}));
      d.v.push_back(at::zeros({length, c.d_model}));
    }
    d.length = length;
    dense[seq] = d;
  };
  auto check = [&](int64_t seq) {
    const Dense& d = dense[seq];
    for (int l = 0; l < c.n_layers; ++l) {
      for (int64_t len : {int64_t{1}, d.written / 2 + 1, d.written}) {
        if (len > d.written || len == 0) continue;
        auto [k, v] = cache.Read(seq, l, len);
        ASSERT_EQ(k.size(0), len);
        EXPECT_TRUE(at::equal(k, d.k[l].narrow(0, 0, len))) << "seq " << seq << " layer " << l;
        EXPECT_TRUE(at::equal(v, d.v[l].narrow(0, 0, len))) << "seq " << seq << " layer " << l;
      }
    }
  };
  start(1, 23);
  start(2, 9);
  start(3, 30);
  int64_t next_seq = 4;
  for (int round = 0; round < 60; ++round) {
    // Pick a live sequence with room and write a random chunk to every layer.
    std::vector<int64_t> live;
    for (auto& [seq, d] : dense) {
      if (d.written < d.length) live.push_back(seq);
    }
    if (live.empty()) break;
    const int64_t seq = live[rng() % live.size()];
    Dense& d = dense[seq];
    const int64_t n = 1 + rng() % std::min<int64_t>(7, d.length - d.written);
    for (int l = 0; l < c.n_layers; ++l) {
      // Magnitudes from 1e-8 (fp16 subnormals and zero) to 1e5 (beyond
      // fp16's largest finite value, 65504: infinity).
      const at::Tensor scale = at::pow(10.0, at::randint(-8, 6, {n, 1}).to(at::kFloat));
      at::Tensor k = at::randn({n, c.d_model}) * scale, v = at::randn({n, c.d_model}) * scale;
      cache.Write(seq, l, d.written, k, v);
      d.k[l].narrow(0, d.written, n).copy_(stored(k));
      d.v[l].narrow(0, d.written, n).copy_(stored(v));
    }
    d.written += n;
    for (auto& [s, unused] : dense) check(s);
    if (d.written == d.length) {
      // Finished: release and start another in its blocks.
      cache.Release(seq);
      dense.erase(seq);
      start(next_seq++, 5 + rng() % 20);
    }
  }
  EXPECT_GT(next_seq, 6);  // blocks were reused several times
}

TEST(KvCacheTest, MatchesDenseReference) { CheckMatchesDenseReference(KvDtype::kFp32); }

TEST(KvCacheTest, Fp16RoundsAsLibTorchAndHalvesTheBytes) {
  CheckMatchesDenseReference(KvDtype::kFp16);
  const ModelConfig c = SmallConfig();
  EXPECT_EQ(PagedKvCache::BlockBytes(c, 16, KvDtype::kFp16) * 2, PagedKvCache::BlockBytes(c, 16));
  PagedKvCache cache(c, 10, 16, 0, KvDtype::kFp16);
  EXPECT_EQ(cache.bytes(), PagedKvCache::BytesFor(c, 10, 16, KvDtype::kFp16));
  EXPECT_EQ(cache.keys(0).scalar_type(), at::kHalf);
  EXPECT_EQ(cache.keys(0).nbytes() * 2 * c.n_layers, static_cast<size_t>(cache.bytes()));
}

// int8: every value read back within half a step of its head's scale
// (max |x| / 127 over the head's values at that position), the largest
// magnitude of each head exact up to fp32 rounding, zeros kept; the bytes
// are the int8 stores plus one fp32 scale per position and head.
TEST(KvCacheTest, Int8KeepsEachValueWithinHalfAStepOfItsHeadsScale) {
  const ModelConfig c = SmallConfig();
  const int64_t heads = c.n_heads, hd = c.d_model / c.n_heads;
  PagedKvCache cache(c, 8, 4, 0, KvDtype::kInt8);
  ASSERT_TRUE(cache.Reserve(7, 11));
  at::manual_seed(3);
  // Heads of very different magnitudes in one row, and an all-zero head.
  at::Tensor magnitude = at::pow(10.0, at::randint(-6, 4, {11, heads, 1}).to(at::kFloat));
  at::Tensor k = (at::randn({11, heads, hd}) * magnitude).reshape({11, c.d_model});
  at::Tensor v = (at::randn({11, heads, hd}) * magnitude).reshape({11, c.d_model});
  k.narrow(1, 0, hd).zero_();
  for (int layer = 0; layer < c.n_layers; ++layer) cache.Write(7, layer, 0, k, v);
  for (int layer = 0; layer < c.n_layers; ++layer) {
    auto [k_read, v_read] = cache.Read(7, layer, 11);
    for (const auto& [wrote, read] : {std::pair{k, k_read}, std::pair{v, v_read}}) {
      at::Tensor amax = wrote.reshape({11, heads, hd}).abs().amax(2, true);
      at::Tensor error = (read - wrote).reshape({11, heads, hd}).abs();
      EXPECT_TRUE((error <= amax / 254 * (1 + 1e-5)).all().item<bool>())
          << "layer " << layer << ": worst error / step " << (error / (amax / 127 + 1e-30)).max().item<float>();
      EXPECT_TRUE(at::allclose(read.reshape({11, heads, hd}).abs().amax(2, true), amax, 1e-6, 0));
    }
    EXPECT_TRUE(at::equal(k_read.narrow(1, 0, hd), at::zeros({11, hd})));
  }
  EXPECT_EQ(cache.keys(0).scalar_type(), at::kChar);
  EXPECT_EQ(PagedKvCache::BlockBytes(c, 4, KvDtype::kInt8),
            2 * c.n_layers * 4 * (c.d_model + 4 * c.n_heads));
  EXPECT_EQ((cache.keys(0).nbytes() + cache.key_scales(0).nbytes()) * 2 * c.n_layers,
            static_cast<size_t>(cache.bytes()));
}

// A NaN or an infinity in a head gives that head a NaN scale (read back
// as NaN, as an fp32 cache would hold a non-finite value) and leaves the
// other heads exact to half a step; subnormal magnitudes keep their sign
// and size.
TEST(KvCacheTest, Int8NonFiniteHeadsReadBackAsNaN) {
  const ModelConfig c = SmallConfig();  // 2 heads of 4
  PagedKvCache cache(c, 2, 4, 0, KvDtype::kInt8);
  ASSERT_TRUE(cache.Reserve(1, 3));
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  at::Tensor k = at::tensor({1.0f, inf, 2.0f, 3.0f, 0.5f, -0.25f, 0.0f, 1.0f,   //
                             nan, 1.0f, 1.0f, 1.0f, 1e-40f, -1e-40f, 0.0f, 5e-41f,  //
                             1.0f, 2.0f, 3.0f, 4.0f, 0.0f, 0.0f, 0.0f, 0.0f})
                     .reshape({3, 8});
  for (int layer = 0; layer < c.n_layers; ++layer) cache.Write(1, layer, 0, k, k);
  auto [read, unused] = cache.Read(1, 0, 3);
  EXPECT_TRUE(at::isnan(read.narrow(0, 0, 2).narrow(1, 0, 4)).all().item<bool>()) << read;
  EXPECT_TRUE(at::allclose(read[0].narrow(0, 4, 4), k[0].narrow(0, 4, 4), 0, 0.5 / 127 + 1e-7)) << read;
  EXPECT_TRUE(at::equal(at::sign(read[1].narrow(0, 4, 4)), at::sign(k[1].narrow(0, 4, 4)))) << read;
  EXPECT_TRUE(at::allclose(read[2].narrow(0, 0, 4), k[2].narrow(0, 0, 4), 0, 2.0 / 127 + 1e-6)) << read;
  EXPECT_TRUE(at::equal(read[2].narrow(0, 4, 4), at::zeros({4})));
}

TEST(KvCacheTest, DtypeNamesParseBack) {
  for (KvDtype t : {KvDtype::kFp32, KvDtype::kFp16, KvDtype::kInt8}) {
    Result<KvDtype> back = ParseKvDtype(KvDtypeName(t));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, t);
  }
  Result<KvDtype> bad = ParseKvDtype("bf16");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expected fp32"), std::string::npos) << bad.status().ToString();
  EXPECT_NE(bad.status().message().find("int8"), std::string::npos) << bad.status().ToString();
}

// The --kv-dtype flag's declared choices (job/infer_job.h) are exactly the
// cache types this file can build.
TEST(KvCacheTest, TheKvDtypeFlagDeclaresExactlyTheTypes) {
  std::set<std::string> declared;
  InferJob job;
  auto collect = [&](auto&, const FieldInfo& info) {
    if (info.name != "kv_dtype") return;
    for (std::string_view choice : FieldChoices(info)) declared.emplace(choice);
  };
  job.VisitFields(collect);
  std::set<std::string> named;
  for (KvDtype t : {KvDtype::kFp32, KvDtype::kFp16, KvDtype::kInt8}) named.emplace(KvDtypeName(t));
  EXPECT_EQ(declared, named);
}

}  // namespace
}  // namespace pw
