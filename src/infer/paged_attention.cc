// Paged attention (see paged_attention.h). The vector path is compiled with
// a per-function target attribute (as model/fused_row_kernels.cc), so the
// library builds with the default flags and runs on any x86-64; it is taken
// only when the CPU has AVX2, FMA and F16C (fp16 caches are widened with it)
// and the kernels are not forced to scalar (model/fused_kernels.h
// ActiveKernelIsa); the AVX-512 weighted sum only at the AVX-512 level.
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
#include <utility>

#include "core/check.h"
#include "model/fused_kernels.h"
#include "model/fused_row_kernels.h"

namespace pw {
namespace {

// One layer's cache as one sequence sees it; T is the store's element
// type (float, c10::Half or int8_t: widened to fp32 on load, all sums in
// fp32). An int8 store's values are int8 * the scale of their position and
// head (ks, vs: [slot, head]); the kernels read the int8 and apply the
// scales to the scores and to the weights (MultiplyByScales), so the
// inner loops stay those of the other types.
template <class T>
struct RowView {
  const T* k;            // the layer's K store
  const T* v;            // the layer's V store
  const int64_t* blocks;  // the sequence's block table
  int64_t block_size, d, hd, heads;
  float scale;
  const float* ks = nullptr;  // int8: K scales, [slot, kv head]
  const float* vs = nullptr;  // int8: V scales
  // Grouped-query attention: a cached row holds kv_d = heads / group heads;
  // query head h reads key/value head h / group (group 1: kv_d = d).
  int64_t kv_d = 0, group = 1;

  // Column of query head h's key/value head within a cached row.
  int64_t KvCol(int64_t h) const { return (h / group) * hd; }
  int64_t kv_heads() const { return heads / group; }
};

// s[(h - h0) * stride + j] *= scales[slot of key j, h] for heads [h0, h1)
// and keys j < length; no-op without scales (fp32, fp16).
template <class T>
void MultiplyByScales(const RowView<T>& r, const float* scales, int64_t h0, int64_t h1, int64_t length,
                      float* s, int64_t stride) {
  if (scales == nullptr) return;
  for (int64_t b = 0, j = 0; j < length; ++b) {
    const float* row = scales + r.blocks[b] * r.block_size * r.kv_heads();
    const int64_t count = std::min(r.block_size, length - j);
    for (int64_t o = 0; o < count; ++o, ++j, row += r.kv_heads()) {
      for (int64_t h = h0; h < h1; ++h) s[(h - h0) * stride + j] *= row[h / r.group];
    }
  }
}

// ---------------------------------------------------------------- scalar

// s[j] = scale · q_h · k_j,h for keys j < length.
template <class T>
void ScoresScalar(const RowView<T>& r, const float* q, int64_t h, int64_t length, float* s) {
  const float* qh = q + h * r.hd;
  for (int64_t b = 0, j = 0; j < length; ++b) {
    const T* key = r.k + r.blocks[b] * r.block_size * r.kv_d + r.KvCol(h);
    for (int64_t o = 0; o < r.block_size && j < length; ++o, ++j, key += r.kv_d) {
      float dot = 0.0f;
      for (int64_t c = 0; c < r.hd; ++c) dot += qh[c] * static_cast<float>(key[c]);
      s[j] = dot * r.scale;
    }
  }
}

// out[h·hd, (h+1)·hd) = sum_j p[j] · v_j,h.
template <class T>
void WeightedSumScalar(const RowView<T>& r, const float* p, int64_t h, int64_t length, float* out) {
  float* oh = out + h * r.hd;
  std::fill(oh, oh + r.hd, 0.0f);
  for (int64_t b = 0, j = 0; j < length; ++b) {
    const T* value = r.v + r.blocks[b] * r.block_size * r.kv_d + r.KvCol(h);
    for (int64_t o = 0; o < r.block_size && j < length; ++o, ++j, value += r.kv_d) {
      for (int64_t c = 0; c < r.hd; ++c) oh[c] += p[j] * static_cast<float>(value[c]);
    }
  }
}

// ---------------------------------------------------------------- AVX2
//
// One query row against all heads at once: every key and value row (d
// floats, all heads) is read once, front to back, block after block, so
// the history streams from memory in 16 KiB runs the hardware prefetcher
// follows. (Walking it head by head read each row in hd-float pieces eight
// times over and reached ~60 % of the read bandwidth at 128 sequences,
// against 72-85 % this way and 77-91 % with the AVX-512 weighted sum below;
// bench/paged_attention_torch_bench.)

#define PW_AVX2 __attribute__((target("avx2,fma,f16c")))

// Asks for one cached row (d elements, every head) to be brought to L2.
template <class T>
inline void PrefetchRow(const T* row, int64_t d) {
  const char* p = reinterpret_cast<const char*>(row);
  const int64_t bytes = d * static_cast<int64_t>(sizeof(T));
  for (int64_t o = 0; o < bytes; o += 64) _mm_prefetch(p + o, _MM_HINT_T1);
}

// Prefetches the keys of the query row computed after this one, one key
// row per Step(), so they arrive while this row's values are summed (the
// walk over keys in turn prefetches the values). With the hardware
// prefetcher alone the kernel waited for memory at every sequence and
// block change and read ~10 GB/s at 128 sequences against ~19 for a plain
// stream (bench/paged_attention_torch_bench); with both prefetches a
// one-rank decode at 128 sequences ran 15-35 % faster (four alternated
// rounds of `pipewright infer`, the prefetches switched by a temporary
// toggle).
template <class T>
class NextKeys {
 public:
  NextKeys() = default;  // nothing to prefetch
  NextKeys(const RowView<T>& r, int64_t length) : r_(r), length_(length) {}
  void Step() {
    if (j_ >= length_) return;
    PrefetchRow(r_.k + (r_.blocks[b_] * r_.block_size + o_) * r_.kv_d, r_.kv_d);
    ++j_;
    if (++o_ == r_.block_size) o_ = 0, ++b_;
  }
  void Rest() {
    while (j_ < length_) Step();
  }

 private:
  RowView<T> r_{};
  int64_t length_ = 0, j_ = 0, b_ = 0, o_ = 0;
};

// Eight cached values as fp32 (fp16 widened exactly by F16C).
PW_AVX2 inline __m256 Load8(const float* p) { return _mm256_loadu_ps(p); }
PW_AVX2 inline __m256 Load8(const c10::Half* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
PW_AVX2 inline __m256 Load8(const int8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// The dot products q_i·k_i of four (q, k) pairs (hd a multiple of 8),
// scaled: one reduction tree for all four.
template <class T>
PW_AVX2 inline __m128 Dot4(const float* q0, const T* k0, const float* q1, const T* k1,
                           const float* q2, const T* k2, const float* q3, const T* k3,
                           int64_t hd, __m128 scale) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t c = 0; c < hd; c += 8) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q0 + c), Load8(k0 + c), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q1 + c), Load8(k1 + c), a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(q2 + c), Load8(k2 + c), a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(q3 + c), Load8(k3 + c), a3);
  }
  const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_mul_ps(_mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)), scale);
}

// s[h * stride + j] = scale · q_h · k_j,h for every head h and key j < length.
template <class T>
PW_AVX2 void ScoresAvx2(const RowView<T>& r, const float* q, int64_t length, float* s,
                        int64_t stride) {
  const __m128 scale = _mm_set1_ps(r.scale);
  const int64_t kv_d = r.kv_d, hd = r.hd, heads = r.heads;
  float four[4];
  for (int64_t b = 0, j = 0; j < length; ++b) {
    const T* key = r.k + r.blocks[b] * r.block_size * kv_d;
    const T* value = r.v + r.blocks[b] * r.block_size * kv_d;
    const int64_t count = std::min(r.block_size, length - j);
    for (int64_t o = 0; o < count; ++o, ++j, key += kv_d, value += kv_d) {
      PrefetchRow(value, kv_d);
      int64_t h = 0;
      for (; h + 4 <= heads; h += 4) {
        const float* qh = q + h * hd;
        _mm_storeu_ps(four, Dot4(qh, key + r.KvCol(h), qh + hd, key + r.KvCol(h + 1), qh + 2 * hd,
                                 key + r.KvCol(h + 2), qh + 3 * hd, key + r.KvCol(h + 3), hd, scale));
        for (int u = 0; u < 4; ++u) s[(h + u) * stride + j] = four[u];
      }
      for (; h < heads; ++h) {
        const float* qh = q + h * hd;
        const T* kh = key + r.KvCol(h);
        s[h * stride + j] = _mm_cvtss_f32(Dot4(qh, kh, qh, kh, qh, kh, qh, kh, hd, scale));
      }
    }
  }
}

// out[h·hd, (h+1)·hd) = sum_j p[h * stride + j] · v_j,h for every head h.
template <class T>
PW_AVX2 void WeightedSumAvx2(const RowView<T>& r, const float* p, int64_t length, int64_t stride,
                             float* out, NextKeys<T>& next) {
  const int64_t d = r.d, kv_d = r.kv_d, hd = r.hd, heads = r.heads;
  std::fill(out, out + d, 0.0f);
  for (int64_t b = 0, j = 0; j < length; ++b) {
    const T* value = r.v + r.blocks[b] * r.block_size * kv_d;
    const int64_t count = std::min(r.block_size, length - j);
    for (int64_t o = 0; o < count; ++o, ++j, value += kv_d) {
      next.Step();
      for (int64_t h = 0; h < heads; ++h) {
        const __m256 w = _mm256_set1_ps(p[h * stride + j]);
        float* acc = out + h * hd;
        const T* vh = value + r.KvCol(h);
        for (int64_t c = 0; c < hd; c += 8) {
          _mm256_storeu_ps(acc + c, _mm256_fmadd_ps(w, Load8(vh + c), _mm256_loadu_ps(acc + c)));
        }
      }
    }
  }
  next.Rest();
}

// ---------------------------------------------------------------- AVX-512
//
// The weighted sum with the output row in registers: 256 columns are 16
// zmm accumulators, so each value row costs 16 loads and 16 FMAs and the
// output is stored once, where the AVX2 version loads and stores its
// accumulators for every row. Taken when d is a multiple of 256 and the head
// width of 16 (each register then belongs to one head). The scores below
// it: when the head count divides 16 and the head width is a multiple of 16.
//
// The register loops carry `#pragma GCC unroll`: the project builds at -O2,
// which left them rolled, so the accumulators lived on the stack and every
// FMA loaded and stored one (decode attention at 128 sequences ran 1.3-1.6x
// slower over an fp16 cache, paged_attention_torch_bench).

#define PW_AVX512 __attribute__((target("avx512f,fma,f16c")))

PW_AVX512 inline __m512 Load16(const float* p) { return _mm512_loadu_ps(p); }
PW_AVX512 inline __m512 Load16(const c10::Half* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
PW_AVX512 inline __m512 Load16(const int8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

template <class T>
PW_AVX512 void WeightedSumAvx512(const RowView<T>& r, const float* p, int64_t length,
                                 int64_t stride, float* out, NextKeys<T>& next) {
  constexpr int kRegs = 16, kWidth = 16 * kRegs;
  const int64_t d = r.d, hd = r.hd;
  for (int64_t c0 = 0; c0 < d; c0 += kWidth) {
    __m512 acc[kRegs];
#pragma GCC unroll 16
    for (int i = 0; i < kRegs; ++i) acc[i] = _mm512_setzero_ps();
    // The weight row of each register's head.
    const float* weights[kRegs];
#pragma GCC unroll 16
    for (int i = 0; i < kRegs; ++i) weights[i] = p + ((c0 + 16 * i) / hd) * stride;
    for (int64_t b = 0, j = 0; j < length; ++b) {
      const T* value = r.v + r.blocks[b] * r.block_size * d + c0;
      const int64_t count = std::min(r.block_size, length - j);
      for (int64_t o = 0; o < count; ++o, ++j, value += d) {
        next.Step();
#pragma GCC unroll 16
        for (int i = 0; i < kRegs; ++i) {
          acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(weights[i][j]), Load16(value + 16 * i), acc[i]);
        }
      }
    }
#pragma GCC unroll 16
    for (int i = 0; i < kRegs; ++i) _mm512_storeu_ps(out + c0 + 16 * i, acc[i]);
  }
  next.Rest();
}

// Lane i of the result = the sum of v[i]'s sixteen lanes: sixteen
// reductions in one transpose-and-add tree (15 adds, 30 shuffles).
PW_AVX512 inline __m512 SumEach16(const __m512* v) {
  __m512 w[8], x[4], y[2];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    w[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]),
                         _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  }
#pragma GCC unroll 8
  for (int i = 0; i < 4; ++i) {
    x[i] = _mm512_add_ps(_mm512_shuffle_ps(w[2 * i], w[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(w[2 * i], w[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
#pragma GCC unroll 8
  for (int i = 0; i < 2; ++i) {
    y[i] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0x44),
                         _mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0xEE));
  }
  return _mm512_add_ps(_mm512_shuffle_f32x4(y[0], y[1], 0x88),
                       _mm512_shuffle_f32x4(y[0], y[1], 0xDD));
}

// The scores with sixteen (key, head) dot products per reduction tree:
// 16 / kHeads keys at a time, each head's products summed lane-wise first
// (hd / 16 FMAs), so a key costs d / 16 FMAs plus its share of one tree,
// where the AVX2 version pays a horizontal add per four heads and reloads
// the query (d / 8 FMAs and twice the loads). Prefetches the values as
// ScoresAvx2 does.
template <int kHeads, class T>
PW_AVX512 void ScoresAvx512(const RowView<T>& r, const float* q, int64_t length, float* s,
                            int64_t stride) {
  constexpr int kKeys = 16 / kHeads;
  const int64_t d = r.d, hd = r.hd;
  const __m512 scale = _mm512_set1_ps(r.scale);
  __m512 v[16];
  alignas(64) float sums[16];
  int64_t b = 0, o = 0;  // block and offset of key j
  for (int64_t j = 0; j < length; j += kKeys) {
#pragma GCC unroll 16
    for (int k = 0; k < kKeys; ++k) {
      if (j + k >= length) {
#pragma GCC unroll 16
        for (int h = 0; h < kHeads; ++h) v[k * kHeads + h] = _mm512_setzero_ps();
        continue;
      }
      const int64_t at = (r.blocks[b] * r.block_size + o) * r.kv_d;
      PrefetchRow(r.v + at, r.kv_d);
      const T* key = r.k + at;
#pragma GCC unroll 16
      for (int h = 0; h < kHeads; ++h) {
        const float* qh = q + h * hd;
        const T* kh = key + r.KvCol(h);
        __m512 acc = _mm512_mul_ps(_mm512_loadu_ps(qh), Load16(kh));
        for (int64_t c = 16; c < hd; c += 16) {
          acc = _mm512_fmadd_ps(_mm512_loadu_ps(qh + c), Load16(kh + c), acc);
        }
        v[k * kHeads + h] = acc;
      }
      if (++o == r.block_size) o = 0, ++b;
    }
    _mm512_store_ps(sums, _mm512_mul_ps(SumEach16(v), scale));
    const int64_t keys = std::min<int64_t>(kKeys, length - j);
    for (int64_t k = 0; k < keys; ++k) {
      for (int h = 0; h < kHeads; ++h) s[h * stride + j + k] = sums[k * kHeads + h];
    }
  }
}

// Runs the AVX-512 scores where the head count divides 16 and the head
// width is a multiple of 16; returns false (nothing written) otherwise.
template <class T>
bool ScoresAvx512For(const RowView<T>& r, const float* q, int64_t length, float* s,
                     int64_t stride) {
  if (r.hd % 16 != 0) return false;
  switch (r.heads) {
    case 1: ScoresAvx512<1>(r, q, length, s, stride); return true;
    case 2: ScoresAvx512<2>(r, q, length, s, stride); return true;
    case 4: ScoresAvx512<4>(r, q, length, s, stride); return true;
    case 8: ScoresAvx512<8>(r, q, length, s, stride); return true;
    case 16: ScoresAvx512<16>(r, q, length, s, stride); return true;
    default: return false;
  }
}

// ---------------------------------------------------------------- driver

std::vector<float>& Scratch(int64_t size) {
  thread_local std::vector<float> buffer;
  if (static_cast<int64_t>(buffer.size()) < size) buffer.resize(size);
  return buffer;
}

// One query row at position `pos` (it sees keys 0 .. pos), every head.
template <class T>
void AttendRow(const RowView<T>& r, const float* q, int64_t pos, float* out, bool vector,
               NextKeys<T>& next) {
  const fused::RowKernels& rows = fused::RowKernelsFor(ActiveKernelIsa());
  const int64_t length = pos + 1;
  float* s = Scratch(r.heads * length).data();
  if (vector) {
    const bool avx512 = ActiveKernelIsa() == KernelIsa::kAvx512;
    if (!avx512 || !ScoresAvx512For(r, q, length, s, length)) ScoresAvx2(r, q, length, s, length);
    MultiplyByScales(r, r.ks, 0, r.heads, length, s, length);
    for (int64_t h = 0; h < r.heads; ++h) rows.softmax(s + h * length, length, length);
    MultiplyByScales(r, r.vs, 0, r.heads, length, s, length);
    // (The register-held output maps cached columns one to one: not with
    // grouped-query attention.)
    if (avx512 && r.group == 1 && r.d % 256 == 0 && r.hd % 16 == 0) {
      WeightedSumAvx512(r, s, length, length, out, next);
    } else {
      WeightedSumAvx2(r, s, length, length, out, next);
    }
    return;
  }
  for (int64_t h = 0; h < r.heads; ++h) {
    ScoresScalar(r, q, h, length, s);
    MultiplyByScales(r, r.ks, h, h + 1, length, s, length);
    rows.softmax(s, length, length);
    MultiplyByScales(r, r.vs, h, h + 1, length, s, length);
    WeightedSumScalar(r, s, h, length, out);
  }
}

template <class T>
void AttendAll(const at::Tensor& q, const at::Tensor& k_store, const at::Tensor& v_store,
               const at::Tensor& k_scales, const at::Tensor& v_scales,
               const std::vector<PagedChunk>& chunks, int64_t n_heads, at::Tensor& out) {
  const int64_t d = q.size(1), hd = d / n_heads, kv_d = k_store.size(2), group = d / kv_d;
  // Every AVX2 CPU has F16C; asked anyway, since the vector path assumes it.
  const bool vector = hd % 8 == 0 && ActiveKernelIsa() != KernelIsa::kScalar &&
                      __builtin_cpu_supports("f16c");
  const float* qd = q.data_ptr<float>();
  const T* kd = k_store.data_ptr<T>();
  const T* vd = v_store.data_ptr<T>();
  float* od = out.data_ptr<float>();
  const int64_t q_stride = q.stride(0), block_size = k_store.size(1);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  const float* ks = k_scales.defined() ? k_scales.data_ptr<float>() : nullptr;
  const float* vs = v_scales.defined() ? v_scales.data_ptr<float>() : nullptr;
  // Work is split over query rows (chunk, row within it): each row's sums
  // stay on one thread.
  std::vector<std::pair<int64_t, int64_t>> units;
  for (size_t c = 0; c < chunks.size(); ++c) {
    for (int64_t i = 0; i < chunks[c].n; ++i) units.emplace_back(c, i);
  }
  at::parallel_for(0, static_cast<int64_t>(units.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const PagedChunk& c = chunks[units[u].first];
      const int64_t row = c.row + units[u].second;
      const RowView<T> r{kd, vd, c.blocks, block_size, d, hd, n_heads, scale, ks, vs, kv_d, group};
      // The next row's keys, unless it is of the same chunk (they are
      // this row's, already in cache).
      NextKeys<T> next;
      if (u + 1 < end && units[u + 1].first != units[u].first) {
        const PagedChunk& n = chunks[units[u + 1].first];
        next = NextKeys<T>({kd, vd, n.blocks, block_size, d, hd, n_heads, scale, ks, vs, kv_d, group},
                           n.start + units[u + 1].second + 1);
      }
      AttendRow(r, qd + row * q_stride, c.start + units[u].second, od + row * d, vector, next);
    }
  });
}

}  // namespace

at::Tensor PagedAttention(const at::Tensor& q, const at::Tensor& k_store,
                          const at::Tensor& v_store, const std::vector<PagedChunk>& chunks,
                          int n_heads, const at::Tensor& k_scales, const at::Tensor& v_scales) {
  PW_CHECK(q.dim() == 2 && q.scalar_type() == at::kFloat && q.stride(1) == 1,
           "PagedAttention: q must be fp32 [rows, d] with unit column stride");
  const int64_t rows = q.size(0), d = q.size(1);
  const at::ScalarType type = k_store.scalar_type();
  PW_CHECK(n_heads > 0 && d % n_heads == 0,
           "PagedAttention: width " + std::to_string(d) + " not divisible by heads");
  const int64_t kv_d = k_store.dim() == 3 ? k_store.size(2) : 0, hd = d / n_heads;
  PW_CHECK(k_store.dim() == 3 && k_store.is_contiguous() && v_store.is_contiguous() &&
               k_store.sizes() == v_store.sizes() && kv_d > 0 && kv_d % hd == 0 && n_heads % (kv_d / hd) == 0 &&
               (type == at::kFloat || type == at::kHalf || type == at::kChar) && v_store.scalar_type() == type,
           "PagedAttention: k/v stores must be contiguous fp32, fp16 or int8 [blocks, block_size, kv_width], "
           "both of one type, with a whole number of heads dividing the query heads");
  if (type == at::kChar) {
    for (const at::Tensor* scales : {&k_scales, &v_scales}) {
      PW_CHECK(scales->defined() && scales->scalar_type() == at::kFloat && scales->is_contiguous() &&
                   scales->dim() == 3 && scales->size(0) == k_store.size(0) &&
                   scales->size(1) == k_store.size(1) && scales->size(2) == kv_d / hd,
               "PagedAttention: an int8 store needs fp32 scales [blocks, block_size, kv heads]");
    }
  }
  for (const PagedChunk& c : chunks) {
    PW_CHECK(c.n > 0 && c.start >= 0 && c.row >= 0 && c.row + c.n <= rows && c.blocks != nullptr,
             "PagedAttention: chunk rows out of range");
  }
  at::Tensor out = at::empty({rows, d}, q.options().memory_format(at::MemoryFormat::Contiguous));
  if (type == at::kHalf) {
    AttendAll<c10::Half>(q, k_store, v_store, {}, {}, chunks, n_heads, out);
  } else if (type == at::kChar) {
    AttendAll<int8_t>(q, k_store, v_store, k_scales, v_scales, chunks, n_heads, out);
  } else {
    AttendAll<float>(q, k_store, v_store, {}, {}, chunks, n_heads, out);
  }
  return out;
}

}  // namespace pw
