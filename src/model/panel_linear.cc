// Fixed-order linear kernels (see panel_linear.h). The tiles are written
// once (panel_linear_tiles.inc) and compiled per instruction set inside a
// target region, so the library builds with the default flags and runs on
// any x86-64; PanelLinear only runs a set the caller says the CPU has.
//
// Bit-equality across the sets rests on three things: each lane does the
// same IEEE operations (a fused multiply-add rounds once, as std::fma
// does), lanes never mix (no horizontal sums), and the compiler is not
// allowed to contract or reassociate the scalar path (explicit std::fma;
// the file is built without -ffast-math).
#include "model/panel_linear.h"

// GCC 12's AVX-512 headers build masks and casts from undefined values,
// which it then reports as uninitialized (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace pw {

namespace {

template <class From, class To, class Convert>
void PackPanelsAs(const From* w, int64_t out, int64_t in, To* packed, Convert convert) {
  for (int64_t o0 = 0; o0 < out; o0 += kPanelWidth) {
    const int64_t n = std::min(kPanelWidth, out - o0);
    To* panel = packed + o0 * in;
    for (int64_t j = 0; j < n; ++j) {
      const From* row = w + (o0 + j) * in;
      for (int64_t k = 0; k < in; ++k) panel[k * n + j] = convert(row[k]);
    }
  }
}

}  // namespace

void PackPanels(const float* w, int64_t out, int64_t in, float* packed) {
  PackPanelsAs(w, out, in, packed, [](float x) { return x; });
}

Bf16Bits ToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<Bf16Bits>((bits >> 16) | 0x40u);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<Bf16Bits>(bits >> 16);
}

float FromBf16(Bf16Bits b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

void PackPanelsBf16(const float* w, int64_t out, int64_t in, Bf16Bits* packed) {
  PackPanelsAs(w, out, in, packed, ToBf16);
}

void PackPanelsFromBf16(const Bf16Bits* w, int64_t out, int64_t in, Bf16Bits* packed) {
  PackPanelsAs(w, out, in, packed, [](Bf16Bits b) { return b; });
}

void PackPanelsInt8(const float* w, int64_t out, int64_t in, int8_t* packed, float* scales) {
  for (int64_t o = 0; o < out; ++o) {
    float amax = 0.0f;
    for (int64_t k = 0; k < in; ++k) amax = std::max(amax, std::fabs(w[o * in + k]));
    scales[o] = amax / 127.0f;
  }
  for (int64_t o0 = 0; o0 < out; o0 += kPanelWidth) {
    const int64_t n = std::min(kPanelWidth, out - o0);
    int8_t* panel = packed + o0 * in;
    for (int64_t j = 0; j < n; ++j) {
      const float* row = w + (o0 + j) * in;
      const float scale = scales[o0 + j];
      for (int64_t k = 0; k < in; ++k) {
        // nearbyint: the default rounding mode, ties to even.
        const float q = scale > 0.0f ? std::nearbyint(row[k] / scale) : 0.0f;
        panel[k * n + j] = static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
      }
    }
  }
}

void UnpackPanels(const float* packed, int64_t out, int64_t in, float* w) {
  for (int64_t o = 0; o < out; ++o) PanelWeightRow(packed, out, in, o, w + o * in);
}

void PanelWeightRow(const float* packed, int64_t out, int64_t in, int64_t o, float* dst) {
  const int64_t o0 = o / kPanelWidth * kPanelWidth, n = std::min(kPanelWidth, out - o0);
  const float* panel = packed + o0 * in + (o - o0);
  for (int64_t k = 0; k < in; ++k) dst[k] = panel[k * n];
}

void PanelWeightRow(const Bf16Bits* packed, int64_t out, int64_t in, int64_t o, float* dst) {
  const int64_t o0 = o / kPanelWidth * kPanelWidth, n = std::min(kPanelWidth, out - o0);
  const Bf16Bits* panel = packed + o0 * in + (o - o0);
  for (int64_t k = 0; k < in; ++k) dst[k] = FromBf16(panel[k * n]);
}

void PanelWeightRow(const int8_t* packed, const float* scales, int64_t out, int64_t in, int64_t o, float* dst) {
  const int64_t o0 = o / kPanelWidth * kPanelWidth, n = std::min(kPanelWidth, out - o0);
  const int8_t* panel = packed + o0 * in + (o - o0);
  for (int64_t k = 0; k < in; ++k) dst[k] = static_cast<float>(panel[k * n]) * scales[o];
}

namespace {

// ------------------------------------------------------------------ scalar

inline float Widen(float w) { return w; }
inline float Widen(Bf16Bits w) { return FromBf16(w); }
inline float Widen(int8_t w) { return static_cast<float>(w); }

template <class W>
void LinearScalar(const PanelLinearArgs& a, const W* packed) {
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* x = a.x + r * a.ldx;
    for (int64_t o = 0; o < a.out; ++o) {
      const int64_t o0 = o / kPanelWidth * kPanelWidth, n = std::min(kPanelWidth, a.out - o0);
      const W* w = packed + o0 * a.in + (o - o0);
      float acc = 0.0f;
      for (int64_t k = 0; k < a.in; ++k) acc = std::fma(x[k], Widen(w[k * n]), acc);
      if (a.scales != nullptr) acc = acc * a.scales[o];
      if (a.bias != nullptr) acc = acc + a.bias[o];
      if (a.residual != nullptr) acc = acc + a.residual[r * a.ldr + o];
      a.y[r * a.ldy + o] = acc;
    }
  }
}

// -------------------------------------------------------------------- AVX2

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {

// A panel's 16 lanes as two 8-lane registers.
struct Ops {
  struct V {
    __m256 lo, hi;
  };
  static constexpr int kRows = 6;    // a full tile: 6 rows x 1 panel,
  static constexpr int kPanels = 1;  // 12 of the 16 registers
  static constexpr int kMaxAccumulators = 6;
  static V Zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static V Load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static __m256i Mask(int lanes) {
    const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), index);
  }
  static V LoadN(const float* p, int lanes) {
    return {_mm256_maskload_ps(p, Mask(lanes)), _mm256_maskload_ps(p + 8, Mask(lanes - 8))};
  }
  // 8 bf16 widened exactly: the bits moved to the upper half of each lane.
  static __m256 Widen8(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
  static V Load(const Bf16Bits* p) {
    return {Widen8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
            Widen8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
  }
  static V LoadN(const Bf16Bits* p, int lanes) {
    alignas(32) Bf16Bits part[16] = {};
    std::memcpy(part, p, lanes * sizeof(Bf16Bits));
    return Load(part);
  }
  // 16 int8 widened exactly (sign-extended, then converted).
  static V Load(const int8_t* p) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return {_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8)))};
  }
  static V LoadN(const int8_t* p, int lanes) {
    alignas(16) int8_t part[16] = {};
    std::memcpy(part, p, lanes);
    return Load(part);
  }
  static V Broadcast(const float* p) {
    const __m256 v = _mm256_broadcast_ss(p);
    return {v, v};
  }
  static V Fma(V x, V w, V acc) { return {_mm256_fmadd_ps(x.lo, w.lo, acc.lo), _mm256_fmadd_ps(x.hi, w.hi, acc.hi)}; }
  static V Add(V a, V b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
  static V Mul(V a, V b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
  static void Store(float* p, V v) {
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
  }
  static void StoreN(float* p, V v, int lanes) {
    _mm256_maskstore_ps(p, Mask(lanes), v.lo);
    _mm256_maskstore_ps(p + 8, Mask(lanes - 8), v.hi);
  }
};

#include "model/panel_linear_tiles.inc"

}  // namespace avx2
#pragma GCC pop_options

// ----------------------------------------------------------------- AVX-512

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,fma")
namespace avx512 {

struct Ops {
  using V = __m512;
  static constexpr int kRows = 8;    // a full tile: 8 rows x 3 panels,
  static constexpr int kPanels = 3;  // 24 of the 32 registers
  static constexpr int kMaxAccumulators = 24;
  static V Zero() { return _mm512_setzero_ps(); }
  static V Load(const float* p) { return _mm512_loadu_ps(p); }
  static __mmask16 Mask(int lanes) { return static_cast<__mmask16>((1u << lanes) - 1u); }
  static V LoadN(const float* p, int lanes) { return _mm512_maskz_loadu_ps(Mask(lanes), p); }
  // 16 bf16 widened exactly: the bits moved to the upper half of each lane.
  static V Load(const Bf16Bits* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static V LoadN(const Bf16Bits* p, int lanes) {
    const __m256i h = _mm256_maskz_loadu_epi16(Mask(lanes), p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  // 16 int8 widened exactly (sign-extended, then converted).
  static V Load(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static V LoadN(const int8_t* p, int lanes) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(Mask(lanes), p)));
  }
  static V Broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static V Fma(V x, V w, V acc) { return _mm512_fmadd_ps(x, w, acc); }
  static V Add(V a, V b) { return _mm512_add_ps(a, b); }
  static V Mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void StoreN(float* p, V v, int lanes) { _mm512_mask_storeu_ps(p, Mask(lanes), v); }
};

#include "model/panel_linear_tiles.inc"

}  // namespace avx512
#pragma GCC pop_options

}  // namespace

namespace {

template <class W>
void LinearAt(KernelIsa isa, const PanelLinearArgs& args, const W* packed) {
  switch (isa) {
    case KernelIsa::kAvx512: return avx512::Linear(args, packed);
    case KernelIsa::kAvx2: return avx2::Linear(args, packed);
    case KernelIsa::kScalar: break;
  }
  LinearScalar(args, packed);
}

}  // namespace

void PanelLinear(KernelIsa isa, const PanelLinearArgs& args) {
  if (args.rows <= 0 || args.out <= 0) return;
  if (args.packed_bf16 != nullptr) return LinearAt(isa, args, args.packed_bf16);
  if (args.packed_int8 != nullptr) return LinearAt(isa, args, args.packed_int8);
  LinearAt(isa, args, args.packed);
}

}  // namespace pw
