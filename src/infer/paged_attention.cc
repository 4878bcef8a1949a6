// Paged attention (see paged_attention.h). The vector path is compiled with
// a per-function target attribute (as model/fused_row_kernels.cc), so the
// library builds with the default flags and runs on any x86-64; it is taken
// only when the CPU has AVX2 and FMA and the kernels are not forced to
// scalar (model/fused_kernels.h ActiveKernelIsa).
//
// Keys of one block sit at a stride of d floats (head h at columns
// [h·hd, (h+1)·hd)), so a block is walked with a pointer bump; the block
// table is consulted once per block, never per key.
#include "infer/paged_attention.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

// GCC 12's AVX headers trip -Wmaybe-uninitialized on their own builtins
// (GCC bug 105593), as in model/fused_row_kernels.cc.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "core/check.h"
#include "model/fused_kernels.h"
#include "model/fused_row_kernels.h"

namespace pw {
namespace {

// One (chunk, head) unit's operands: head columns already applied.
struct HeadView {
  const float* q;        // first query row of the chunk
  int64_t q_stride;
  const float* k;        // layer store + head offset
  const float* v;
  float* out;            // first output row of the chunk
  int64_t out_stride;
  const int64_t* blocks;
  int64_t block_size, d, hd;
  float scale;
};

// ---------------------------------------------------------------- scalar

void ScoresScalar(const HeadView& h, const float* q, int64_t length, float* s) {
  for (int64_t b = 0, j = 0; j < length; ++b) {
    const float* key = h.k + h.blocks[b] * h.block_size * h.d;
    for (int64_t o = 0; o < h.block_size && j < length; ++o, ++j, key += h.d) {
      float dot = 0.0f;
      for (int64_t c = 0; c < h.hd; ++c) dot += q[c] * key[c];
      s[j] = dot * h.scale;
    }
  }
}

void WeightedSumScalar(const HeadView& h, const float* p, int64_t length, float* out) {
  std::fill(out, out + h.hd, 0.0f);
  for (int64_t b = 0, j = 0; j < length; ++b) {
    const float* value = h.v + h.blocks[b] * h.block_size * h.d;
    for (int64_t o = 0; o < h.block_size && j < length; ++o, ++j, value += h.d) {
      for (int64_t c = 0; c < h.hd; ++c) out[c] += p[j] * value[c];
    }
  }
}

// ---------------------------------------------------------------- AVX2

#define PW_AVX2 __attribute__((target("avx2,fma")))

// Dot products of q with four keys (hd a multiple of 8), scaled: one
// reduction tree for all four.
PW_AVX2 inline __m128 Dot4(const float* q, const float* k0, const float* k1, const float* k2,
                           const float* k3, int64_t hd, __m128 scale) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t c = 0; c < hd; c += 8) {
    const __m256 qv = _mm256_loadu_ps(q + c);
    a0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + c), a0);
    a1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k1 + c), a1);
    a2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k2 + c), a2);
    a3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k3 + c), a3);
  }
  const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_mul_ps(_mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)), scale);
}

PW_AVX2 void ScoresAvx2(const HeadView& h, const float* q, int64_t length, float* s) {
  const __m128 scale = _mm_set1_ps(h.scale);
  const int64_t d = h.d;
  for (int64_t b = 0, j = 0; j < length; ++b) {
    const float* key = h.k + h.blocks[b] * h.block_size * d;
    const int64_t count = std::min(h.block_size, length - j);
    int64_t o = 0;
    for (; o + 4 <= count; o += 4, key += 4 * d) {
      _mm_storeu_ps(s + j + o, Dot4(q, key, key + d, key + 2 * d, key + 3 * d, h.hd, scale));
    }
    for (; o < count; ++o, key += d) {
      s[j + o] = _mm_cvtss_f32(Dot4(q, key, key, key, key, h.hd, scale));
    }
    j += count;
  }
}

// out[c0, c0 + 8 * kAcc) = sum_j p[j] v_j[c0, ...).
template <int kAcc>
PW_AVX2 void WeightedColumnsAvx2(const HeadView& h, const float* p, int64_t length, int64_t c0,
                                 float* out) {
  __m256 acc[kAcc];
  for (int a = 0; a < kAcc; ++a) acc[a] = _mm256_setzero_ps();
  for (int64_t b = 0, j = 0; j < length; ++b) {
    const float* value = h.v + h.blocks[b] * h.block_size * h.d + c0;
    const int64_t count = std::min(h.block_size, length - j);
    for (int64_t o = 0; o < count; ++o, value += h.d) {
      const __m256 w = _mm256_set1_ps(p[j + o]);
      for (int a = 0; a < kAcc; ++a) {
        acc[a] = _mm256_fmadd_ps(w, _mm256_loadu_ps(value + 8 * a), acc[a]);
      }
    }
    j += count;
  }
  for (int a = 0; a < kAcc; ++a) _mm256_storeu_ps(out + c0 + 8 * a, acc[a]);
}

PW_AVX2 void WeightedSumAvx2(const HeadView& h, const float* p, int64_t length, float* out) {
  int64_t c0 = 0;
  for (; c0 + 32 <= h.hd; c0 += 32) WeightedColumnsAvx2<4>(h, p, length, c0, out);
  for (; c0 < h.hd; c0 += 8) WeightedColumnsAvx2<1>(h, p, length, c0, out);
}

// ---------------------------------------------------------------- driver

std::vector<float>& Scratch(int64_t size) {
  thread_local std::vector<float> buffer;
  if (static_cast<int64_t>(buffer.size()) < size) buffer.resize(size);
  return buffer;
}

void AttendHead(const HeadView& h, int64_t start, int64_t n, bool vector) {
  const fused::RowKernels& rows = fused::RowKernelsFor(ActiveKernelIsa());
  float* s = Scratch(start + n).data();
  for (int64_t i = 0; i < n; ++i) {
    const float* q = h.q + i * h.q_stride;
    float* out = h.out + i * h.out_stride;
    const int64_t length = start + i + 1;
    if (vector) {
      ScoresAvx2(h, q, length, s);
    } else {
      ScoresScalar(h, q, length, s);
    }
    rows.softmax(s, length, length);
    if (vector) {
      WeightedSumAvx2(h, s, length, out);
    } else {
      WeightedSumScalar(h, s, length, out);
    }
  }
}

}  // namespace

at::Tensor PagedAttention(const at::Tensor& q, const at::Tensor& k_store,
                          const at::Tensor& v_store, const std::vector<PagedChunk>& chunks,
                          int n_heads) {
  PW_CHECK(q.dim() == 2 && q.scalar_type() == at::kFloat && q.stride(1) == 1,
           "PagedAttention: q must be fp32 [rows, d] with unit column stride");
  const int64_t rows = q.size(0), d = q.size(1);
  PW_CHECK(k_store.dim() == 3 && k_store.is_contiguous() && v_store.is_contiguous() &&
               k_store.sizes() == v_store.sizes() && k_store.size(2) == d &&
               k_store.scalar_type() == at::kFloat && v_store.scalar_type() == at::kFloat,
           "PagedAttention: k/v stores must be contiguous fp32 [blocks, block_size, d]");
  PW_CHECK(n_heads > 0 && d % n_heads == 0,
           "PagedAttention: width " + std::to_string(d) + " not divisible by heads");
  for (const PagedChunk& c : chunks) {
    PW_CHECK(c.n > 0 && c.start >= 0 && c.row >= 0 && c.row + c.n <= rows && c.blocks != nullptr,
             "PagedAttention: chunk rows out of range");
  }
  const int64_t hd = d / n_heads;
  const bool vector = hd % 8 == 0 && ActiveKernelIsa() != KernelIsa::kScalar;
  at::Tensor out = at::empty({rows, d}, q.options().memory_format(at::MemoryFormat::Contiguous));
  const float* qd = q.data_ptr<float>();
  const float* kd = k_store.data_ptr<float>();
  const float* vd = v_store.data_ptr<float>();
  float* od = out.data_ptr<float>();
  const int64_t q_stride = q.stride(0), block_size = k_store.size(1);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  const int64_t units = static_cast<int64_t>(chunks.size()) * n_heads;
  at::parallel_for(0, units, 1, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const PagedChunk& c = chunks[u / n_heads];
      const int64_t col = (u % n_heads) * hd;
      const HeadView h{qd + c.row * q_stride + col, q_stride, kd + col, vd + col,
                       od + c.row * d + col, d, c.blocks, block_size, d, hd, scale};
      AttendHead(h, c.start, c.n, vector);
    }
  });
  return out;
}

}  // namespace pw
