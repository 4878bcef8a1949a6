// Decode attention over the paged KV cache (infer/paged_attention.h) against
// the machine's limit for it: reading the K/V history once from memory.
//
//   BM_DecodeAttention/S/H   one layer's attention for S sequences of one
//                            query row each, H positions of history, the
//                            yardstick's width (d 256, 8 heads, blocks of
//                            16), block tables shuffled as a long run
//                            leaves them. Counter kv_GB/s: K/V bytes read
//                            per second.
//   BM_DecodeAttentionFp16   the same over an fp16 cache (--kv-dtype fp16):
//                            half the bytes; kv_GB/s counts fp16 bytes.
//   BM_StreamRead/S/H        summing the same number of bytes from one
//                            contiguous buffer (AVX2 when the CPU has it):
//                            the read bandwidth the kernel is bounded by.
//
// The cache holds 8 layers' worth of blocks and every iteration moves to the
// next layer's store, as a decode pass does, so a 480 MiB L3 does not keep
// one layer's history warm between iterations. Run with one thread:
//   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 build/bench/paged_attention_torch_bench
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <immintrin.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "infer/kv_cache.h"
#include "infer/paged_attention.h"

namespace pw {
namespace {

constexpr int kWidth = 256, kHeads = 8, kBlock = 16, kLayers = 8;

struct DecodeSetup {
  DecodeSetup(int64_t seqs, int64_t history, KvDtype dtype) {
    ModelConfig config;
    config.d_model = kWidth;
    config.n_heads = kHeads;
    config.n_layers = kLayers;
    config.seq_len = history + 1;
    const int64_t per_seq = (history + kBlock) / kBlock;
    cache = std::make_unique<PagedKvCache>(config, seqs * per_seq, kBlock, 0, dtype);
    // Grow the sequences in turns of one block, as continuous batching
    // does, so each table is spread over the store.
    for (int64_t grow = kBlock; grow < history + 1 + kBlock; grow += kBlock) {
      for (int64_t s = 0; s < seqs; ++s) cache->Reserve(s, std::min(grow, history + 1));
    }
    at::manual_seed(1);
    for (int layer = 0; layer < kLayers; ++layer) {
      for (const at::Tensor* store : {&cache->keys(layer), &cache->values(layer)}) {
        at::Tensor(*store).copy_(at::randn(store->sizes()));
      }
    }
    for (int64_t s = 0; s < seqs; ++s) chunks.push_back({cache->blocks(s).data(), history, 1, s});
    q = at::randn({seqs, 3 * kWidth}).narrow(1, 0, kWidth);
    // K and V with int8's scales: the bytes the kernel reads.
    bytes = static_cast<double>(seqs) * (history + 1) * PagedKvCache::BlockBytes(config, 1, dtype) / config.n_layers;
  }
  std::unique_ptr<PagedKvCache> cache;
  std::vector<PagedChunk> chunks;
  at::Tensor q;
  double bytes = 0;
};

void DecodeAttention(benchmark::State& state, KvDtype dtype) {
  at::set_num_threads(1);
  c10::NoGradGuard no_grad;
  DecodeSetup setup(state.range(0), state.range(1), dtype);
  int layer = 0;
  for (auto _ : state) {
    at::Tensor out = PagedAttention(setup.q, setup.cache->keys(layer), setup.cache->values(layer),
                                    setup.chunks, kHeads, setup.cache->key_scales(layer),
                                    setup.cache->value_scales(layer));
    benchmark::DoNotOptimize(out.data_ptr<float>());
    layer = (layer + 1) % kLayers;
  }
  state.counters["kv_GB/s"] =
      benchmark::Counter(setup.bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_DecodeAttention(benchmark::State& state) { DecodeAttention(state, KvDtype::kFp32); }
void BM_DecodeAttentionFp16(benchmark::State& state) { DecodeAttention(state, KvDtype::kFp16); }
void BM_DecodeAttentionInt8(benchmark::State& state) { DecodeAttention(state, KvDtype::kInt8); }

__attribute__((target("avx2"))) float SumAvx2(const float* p, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(p + i + 24));
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  float s = std::accumulate(lanes, lanes + 8, 0.0f);
  for (; i < n; ++i) s += p[i];
  return s;
}

void BM_StreamRead(benchmark::State& state) {
  const int64_t floats = 2 * state.range(0) * (state.range(1) + 1) * kWidth;
  // One buffer per layer, as above, so the reads come from memory.
  std::vector<std::vector<float>> layers(kLayers, std::vector<float>(floats, 1.0f));
  const bool avx2 = __builtin_cpu_supports("avx2");
  int layer = 0;
  for (auto _ : state) {
    const std::vector<float>& buf = layers[layer];
    benchmark::DoNotOptimize(avx2 ? SumAvx2(buf.data(), floats)
                                  : std::accumulate(buf.begin(), buf.end(), 0.0f));
    layer = (layer + 1) % kLayers;
  }
  state.counters["kv_GB/s"] = benchmark::Counter(floats * sizeof(float) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// (sequences, history): the bench's one-rank rows at 16 and 128 sequences,
// early and late in a 48-token generation of ~40-token prompts.
#define PW_DECODE_SHAPES Args({16, 48})->Args({16, 96})->Args({128, 48})->Args({128, 96})
BENCHMARK(BM_DecodeAttention)->PW_DECODE_SHAPES;
BENCHMARK(BM_DecodeAttentionFp16)->PW_DECODE_SHAPES;
BENCHMARK(BM_DecodeAttentionInt8)->PW_DECODE_SHAPES;
BENCHMARK(BM_StreamRead)->PW_DECODE_SHAPES;

}  // namespace
}  // namespace pw

BENCHMARK_MAIN();
