// PagedAttention against model/gpt_math.h CausalAttention over the gathered
// history (PagedKvCache::Read): several sequences in one call, prefill
// chunks at nonzero starts and decode rows together, block tables out of
// order, head widths with and without a vector path (and widths of 256 and
// 512, the AVX-512 weighted sum's; head counts dividing 16, the AVX-512
// scores'), fp32, fp16 and int8 stores, grouped-query caches of fewer
// key/value heads, every kernel level the CPU supports.
#include "infer/paged_attention.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "infer/kv_cache.h"
#include "model/fused_kernels.h"
#include "model/gpt_math.h"

namespace pw {
namespace {

void CheckAgainstGathered(int d_model, int n_heads, int block_size,
                          KvDtype dtype = KvDtype::kFp32, int n_kv_heads = 0) {
  ModelConfig c;
  c.d_model = d_model;
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv_heads;
  c.n_layers = 2;
  c.seq_len = 64;
  PagedKvCache cache(c, 40, block_size, /*held_back=*/0, dtype);
  at::manual_seed(5);
  // Interleaved reservations so block tables are not contiguous.
  struct Piece {
    int64_t seq, start, n;
  };
  const std::vector<Piece> pieces = {{0, 0, 13}, {1, 9, 1}, {2, 20, 7}, {3, 0, 1}, {4, 31, 1}};
  for (int64_t grow = 4; grow <= 40; grow += 4) {
    for (const Piece& p : pieces) ASSERT_TRUE(cache.Reserve(p.seq, std::min(grow, p.start + p.n)));
  }
  const int layer = 1;
  int64_t rows = 0;
  std::vector<PagedChunk> chunks;
  for (const Piece& p : pieces) {
    cache.Write(p.seq, layer, 0, at::randn({p.start + p.n, c.kv_width()}),
                at::randn({p.start + p.n, c.kv_width()}));
    chunks.push_back({cache.blocks(p.seq).data(), p.start, p.n, rows});
    rows += p.n;
  }
  // q as a slice of a wider tensor, as the decoder passes it.
  at::Tensor qkv = at::randn({rows, 3 * d_model});
  at::Tensor q = qkv.narrow(1, 0, d_model);
  at::Tensor got = PagedAttention(q, cache.keys(layer), cache.values(layer), chunks, n_heads,
                                  cache.key_scales(layer), cache.value_scales(layer));
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i];
    auto [k, v] = cache.Read(p.seq, layer, p.start + p.n);
    at::Tensor want = CausalAttention(q.narrow(0, chunks[i].row, p.n).contiguous(), k, v, p.start,
                                      n_heads, 0.0, ForwardContext{});
    EXPECT_TRUE(at::allclose(got.narrow(0, chunks[i].row, p.n), want, 1e-5, 1e-5))
        << "d " << d_model << " heads " << n_heads << " kv heads " << c.kv_heads() << " "
        << KvDtypeName(dtype) << " sequence "
        << p.seq << ": max diff "
        << (got.narrow(0, chunks[i].row, p.n) - want).abs().max().item<float>();
  }
}

TEST(PagedAttentionTest, MatchesCausalAttentionOverGatheredHistory) {
  c10::NoGradGuard no_grad;
  for (KernelIsa isa : {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (!CpuSupportsIsa(isa)) continue;
    const KernelIsa before = SetKernelIsaForTesting(isa);
    CheckAgainstGathered(64, 4, 4);   // head width 16: vector path
    CheckAgainstGathered(64, 2, 16);  // width 32: four accumulators
    CheckAgainstGathered(40, 2, 8);   // width 20: scalar path on any CPU
    CheckAgainstGathered(48, 2, 3);   // width 24, blocks of 3
    // d a multiple of 256, head width a multiple of 16: the AVX-512 sum.
    CheckAgainstGathered(256, 8, 16);  // the yardstick's shape
    CheckAgainstGathered(512, 32, 5);  // two register tiles, 16-wide heads
    // The AVX-512 scores' tree takes 16 / heads keys at a time: one head
    // (16 keys, a ragged tail), sixteen heads (one key), blocks of 7.
    CheckAgainstGathered(16, 1, 4);
    CheckAgainstGathered(256, 16, 7);
    // fp16 stores: against the same attention over the cache's values
    // widened back to fp32 (Read), so only the kernel is under test.
    CheckAgainstGathered(64, 2, 16, KvDtype::kFp16);
    CheckAgainstGathered(40, 2, 8, KvDtype::kFp16);
    CheckAgainstGathered(256, 8, 16, KvDtype::kFp16);
    CheckAgainstGathered(256, 16, 7, KvDtype::kFp16);
    // int8 stores: the same, Read applying each position's and head's
    // scale; the kernels scale the scores and the weights instead.
    CheckAgainstGathered(64, 2, 16, KvDtype::kInt8);
    CheckAgainstGathered(40, 2, 8, KvDtype::kInt8);
    CheckAgainstGathered(256, 8, 16, KvDtype::kInt8);
    CheckAgainstGathered(256, 16, 7, KvDtype::kInt8);
    CheckAgainstGathered(16, 1, 4, KvDtype::kInt8);
    // Grouped-query attention: a cache of fewer key/value heads, each read
    // for its group of query heads in place (CausalAttention repeats them).
    for (KvDtype dtype : {KvDtype::kFp32, KvDtype::kFp16, KvDtype::kInt8}) {
      CheckAgainstGathered(64, 4, 4, dtype, /*n_kv_heads=*/2);
      CheckAgainstGathered(64, 4, 16, dtype, 1);
      CheckAgainstGathered(40, 2, 8, dtype, 1);     // scalar path
      CheckAgainstGathered(256, 8, 16, dtype, 2);   // AVX-512 scores; its register-held sum is skipped
      CheckAgainstGathered(256, 16, 7, dtype, 4);
      CheckAgainstGathered(512, 32, 5, dtype, 8);
    }
    SetKernelIsaForTesting(before);
  }
}

}  // namespace
}  // namespace pw
