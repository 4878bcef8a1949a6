// Row kernels (see fused_row_kernels.h). The vector sets are compiled with
// per-function target attributes, so the library builds with the default
// flags and runs on any x86-64; the dispatcher only hands out a set the CPU
// reports (CpuSupportsIsa).
//
// exp: Cephes' expf scheme (range reduction by ln 2 in two parts, degree-5
// polynomial), relative error about 2 ulp, inputs clamped to [-87.3, 88.3]
// (the softmax only feeds x - max <= 0; GELU feeds -x^2/2).
// erfc (GELU): Numerical Recipes' erfcc, t = 1 / (1 + |z|/2), relative error
// below 1.2e-7 for every z, so 1 + erf(z) = erfc(-z) keeps its relative
// accuracy in the far negative tail where 1 + erf would cancel.
#include "model/fused_row_kernels.h"

// GCC 12's AVX-512 headers build reductions and casts from
// _mm512_undefined_ps(), which it then reports as uninitialized (a known
// false positive, GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace pw::fused {
namespace {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kExpP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                            4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
constexpr float kExpLo = -87.3f, kExpHi = 88.3f;
// erfcc coefficients, t * exp(-z^2 + c0 + t (c1 + t (c2 + ...))).
constexpr float kErfc[10] = {-1.26551223f, 1.00002368f, 0.37409196f, 0.09678418f,
                             -0.18628806f, 0.27886807f, -1.13520398f, 1.48851587f,
                             -0.82215223f, 0.17087277f};
constexpr float kSqrtHalf = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// ---------------------------------------------------------------- scalar

void SoftmaxScalar(float* s, int64_t valid, int64_t length) {
  float max = s[0];
  for (int64_t j = 1; j < valid; ++j) max = std::max(max, s[j]);
  float sum = 0.0f;
  for (int64_t j = 0; j < valid; ++j) {
    s[j] = std::exp(s[j] - max);
    sum += s[j];
  }
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < valid; ++j) s[j] *= inv;
  std::fill(s + valid, s + length, 0.0f);
}

void SoftmaxBackwardScalar(const float* p, float* g, int64_t valid, int64_t length) {
  float dot = 0.0f;
  for (int64_t j = 0; j < valid; ++j) dot += p[j] * g[j];
  for (int64_t j = 0; j < valid; ++j) g[j] = p[j] * (g[j] - dot);
  std::fill(g + valid, g + length, 0.0f);
}

void GeluScalar(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * std::erfc(-x[i] * kSqrtHalf);
}

void GeluBackwardScalar(const float* x, const float* dy, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float cdf = 0.5f * std::erfc(-v * kSqrtHalf);
    dx[i] = dy[i] * (cdf + v * kInvSqrt2Pi * std::exp(-0.5f * v * v));
  }
}

// x * sigmoid(z) as x / (1 + exp(-z)): SiLU (z = x) and GELU-tanh, whose
// 0.5 (1 + tanh(u)) is sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3).
constexpr float kGeluTanhScale = 2.0f * 0.79788456080286536f;
constexpr float kGeluTanhCubic = 0.044715f;

void SiluMulScalar(const float* gate, const float* up, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void GeluTanhScalar(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i], z = kGeluTanhScale * (v + kGeluTanhCubic * v * v * v);
    y[i] = v / (1.0f + std::exp(-z));
  }
}

// ---------------------------------------------------------------- AVX2

#define PW_AVX2 __attribute__((target("avx2,fma")))

PW_AVX2 inline __m256 Exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kExpLo)), _mm256_set1_ps(kExpHi));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kExpP[0]);
  for (int i = 1; i < 6; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP[i]));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// Lanes [0, count) set, count in [0, 8].
PW_AVX2 inline __m256i Mask8(int64_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

PW_AVX2 inline float HorizontalMax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

PW_AVX2 inline float HorizontalSum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

PW_AVX2 void SoftmaxAvx2(float* s, int64_t valid, int64_t length) {
  const int64_t full = valid & ~int64_t{7};
  const __m256i tail = Mask8(valid - full);
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  for (int64_t j = 0; j < full; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(s + j));
  if (full < valid) {
    __m256 t = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_maskload_ps(s + full, tail),
                                _mm256_castsi256_ps(tail));
    vmax = _mm256_max_ps(vmax, t);
  }
  const __m256 max = _mm256_set1_ps(HorizontalMax8(vmax));
  __m256 vsum = _mm256_setzero_ps();
  for (int64_t j = 0; j < full; j += 8) {
    const __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(s + j), max));
    _mm256_storeu_ps(s + j, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  if (full < valid) {
    __m256 e = Exp8(_mm256_sub_ps(_mm256_maskload_ps(s + full, tail), max));
    e = _mm256_and_ps(e, _mm256_castsi256_ps(tail));
    _mm256_maskstore_ps(s + full, tail, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  const __m256 inv = _mm256_set1_ps(1.0f / HorizontalSum8(vsum));
  for (int64_t j = 0; j < full; j += 8) {
    _mm256_storeu_ps(s + j, _mm256_mul_ps(_mm256_loadu_ps(s + j), inv));
  }
  if (full < valid) {
    _mm256_maskstore_ps(s + full, tail, _mm256_mul_ps(_mm256_maskload_ps(s + full, tail), inv));
  }
  std::memset(s + valid, 0, sizeof(float) * (length - valid));
}

PW_AVX2 void SoftmaxBackwardAvx2(const float* p, float* g, int64_t valid, int64_t length) {
  const int64_t full = valid & ~int64_t{7};
  const __m256i tail = Mask8(valid - full);
  __m256 vdot = _mm256_setzero_ps();
  for (int64_t j = 0; j < full; j += 8) {
    vdot = _mm256_fmadd_ps(_mm256_loadu_ps(p + j), _mm256_loadu_ps(g + j), vdot);
  }
  if (full < valid) {
    vdot = _mm256_fmadd_ps(_mm256_maskload_ps(p + full, tail), _mm256_maskload_ps(g + full, tail),
                           vdot);
  }
  const __m256 dot = _mm256_set1_ps(HorizontalSum8(vdot));
  for (int64_t j = 0; j < full; j += 8) {
    _mm256_storeu_ps(g + j, _mm256_mul_ps(_mm256_loadu_ps(p + j),
                                          _mm256_sub_ps(_mm256_loadu_ps(g + j), dot)));
  }
  if (full < valid) {
    _mm256_maskstore_ps(g + full, tail,
                        _mm256_mul_ps(_mm256_maskload_ps(p + full, tail),
                                      _mm256_sub_ps(_mm256_maskload_ps(g + full, tail), dot)));
  }
  std::memset(g + valid, 0, sizeof(float) * (length - valid));
}

// 1 + erf(z) = erfc(-z) and exp(-z^2), for z = x / sqrt 2.
PW_AVX2 inline __m256 CdfTwice8(__m256 x, __m256* gauss) {
  const __m256 z = _mm256_mul_ps(x, _mm256_set1_ps(kSqrtHalf));
  const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), z);
  const __m256 t = _mm256_div_ps(_mm256_set1_ps(1.0f),
                                 _mm256_fmadd_ps(a, _mm256_set1_ps(0.5f), _mm256_set1_ps(1.0f)));
  __m256 p = _mm256_set1_ps(kErfc[9]);
  for (int i = 8; i >= 0; --i) p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(kErfc[i]));
  const __m256 z2 = _mm256_mul_ps(z, z);
  const __m256 erfc_a = _mm256_mul_ps(t, Exp8(_mm256_sub_ps(p, z2)));  // erfc(|z|)
  if (gauss != nullptr) *gauss = Exp8(_mm256_sub_ps(_mm256_setzero_ps(), z2));
  // z >= 0: erfc(-z) = 2 - erfc(z); z < 0: erfc(-z) = erfc(|z|).
  const __m256 pos = _mm256_sub_ps(_mm256_set1_ps(2.0f), erfc_a);
  return _mm256_blendv_ps(pos, erfc_a, z);  // sign bit of z selects
}

PW_AVX2 void GeluAvx2(const float* x, float* y, int64_t n) {
  const __m256 half = _mm256_set1_ps(0.5f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(half, v), CdfTwice8(v, nullptr)));
  }
  if (i < n) {
    const __m256i m = Mask8(n - i);
    const __m256 v = _mm256_maskload_ps(x + i, m);
    _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(_mm256_mul_ps(half, v), CdfTwice8(v, nullptr)));
  }
}

PW_AVX2 inline __m256 SigmoidTimes8(__m256 x, __m256 z) {
  const __m256 e = Exp8(_mm256_sub_ps(_mm256_setzero_ps(), z));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

PW_AVX2 inline __m256 GeluTanhArg8(__m256 v) {
  const __m256 cubic = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(kGeluTanhCubic), v), _mm256_mul_ps(v, v));
  return _mm256_mul_ps(_mm256_set1_ps(kGeluTanhScale), _mm256_add_ps(v, cubic));
}

// Whole vectors, then the tail as one masked vector through the same
// arithmetic: an element's bits do not depend on where it sits.
PW_AVX2 void SiluMulAvx2(const float* gate, const float* up, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(SigmoidTimes8(g, g), _mm256_loadu_ps(up + i)));
  }
  if (i < n) {
    const __m256i m = Mask8(n - i);
    const __m256 g = _mm256_maskload_ps(gate + i, m);
    _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(SigmoidTimes8(g, g), _mm256_maskload_ps(up + i, m)));
  }
}

PW_AVX2 void GeluTanhAvx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(y + i, SigmoidTimes8(v, GeluTanhArg8(v)));
  }
  if (i < n) {
    const __m256i m = Mask8(n - i);
    const __m256 v = _mm256_maskload_ps(x + i, m);
    _mm256_maskstore_ps(y + i, m, SigmoidTimes8(v, GeluTanhArg8(v)));
  }
}

PW_AVX2 inline __m256 GeluGrad8(__m256 v, __m256 g) {
  __m256 gauss;
  const __m256 cdf = _mm256_mul_ps(_mm256_set1_ps(0.5f), CdfTwice8(v, &gauss));
  const __m256 pdf = _mm256_mul_ps(_mm256_mul_ps(v, _mm256_set1_ps(kInvSqrt2Pi)), gauss);
  return _mm256_mul_ps(g, _mm256_add_ps(cdf, pdf));
}

PW_AVX2 void GeluBackwardAvx2(const float* x, const float* dy, float* dx, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dx + i, GeluGrad8(_mm256_loadu_ps(x + i), _mm256_loadu_ps(dy + i)));
  }
  if (i < n) {
    const __m256i m = Mask8(n - i);
    _mm256_maskstore_ps(dx + i, m,
                        GeluGrad8(_mm256_maskload_ps(x + i, m), _mm256_maskload_ps(dy + i, m)));
  }
}

// ---------------------------------------------------------------- AVX-512

#define PW_AVX512 __attribute__((target("avx512f")))

PW_AVX512 inline __m512 Exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kExpLo)), _mm512_set1_ps(kExpHi));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kExpP[0]);
  for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpP[i]));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

PW_AVX512 inline __mmask16 Mask16(int64_t count) {
  return static_cast<__mmask16>((1u << count) - 1u);
}

PW_AVX512 void SoftmaxAvx512(float* s, int64_t valid, int64_t length) {
  const int64_t full = valid & ~int64_t{15};
  const __mmask16 tail = Mask16(valid - full);
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  for (int64_t j = 0; j < full; j += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(s + j));
  if (tail) vmax = _mm512_mask_max_ps(vmax, tail, vmax, _mm512_maskz_loadu_ps(tail, s + full));
  const __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
  __m512 vsum = _mm512_setzero_ps();
  for (int64_t j = 0; j < full; j += 16) {
    const __m512 e = Exp16(_mm512_sub_ps(_mm512_loadu_ps(s + j), max));
    _mm512_storeu_ps(s + j, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  if (tail) {
    const __m512 e =
        _mm512_maskz_mov_ps(tail, Exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, s + full), max)));
    _mm512_mask_storeu_ps(s + full, tail, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
  for (int64_t j = 0; j < full; j += 16) {
    _mm512_storeu_ps(s + j, _mm512_mul_ps(_mm512_loadu_ps(s + j), inv));
  }
  if (tail) {
    _mm512_mask_storeu_ps(s + full, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, s + full), inv));
  }
  std::memset(s + valid, 0, sizeof(float) * (length - valid));
}

PW_AVX512 void SoftmaxBackwardAvx512(const float* p, float* g, int64_t valid, int64_t length) {
  const int64_t full = valid & ~int64_t{15};
  const __mmask16 tail = Mask16(valid - full);
  __m512 vdot = _mm512_setzero_ps();
  for (int64_t j = 0; j < full; j += 16) {
    vdot = _mm512_fmadd_ps(_mm512_loadu_ps(p + j), _mm512_loadu_ps(g + j), vdot);
  }
  if (tail) {
    vdot = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, p + full),
                           _mm512_maskz_loadu_ps(tail, g + full), vdot);
  }
  const __m512 dot = _mm512_set1_ps(_mm512_reduce_add_ps(vdot));
  for (int64_t j = 0; j < full; j += 16) {
    _mm512_storeu_ps(g + j, _mm512_mul_ps(_mm512_loadu_ps(p + j),
                                          _mm512_sub_ps(_mm512_loadu_ps(g + j), dot)));
  }
  if (tail) {
    _mm512_mask_storeu_ps(
        g + full, tail,
        _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, p + full),
                      _mm512_sub_ps(_mm512_maskz_loadu_ps(tail, g + full), dot)));
  }
  std::memset(g + valid, 0, sizeof(float) * (length - valid));
}

PW_AVX512 inline __m512 CdfTwice16(__m512 x, __m512* gauss) {
  const __m512 z = _mm512_mul_ps(x, _mm512_set1_ps(kSqrtHalf));
  const __m512 a = _mm512_abs_ps(z);
  const __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f),
                                 _mm512_fmadd_ps(a, _mm512_set1_ps(0.5f), _mm512_set1_ps(1.0f)));
  __m512 p = _mm512_set1_ps(kErfc[9]);
  for (int i = 8; i >= 0; --i) p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(kErfc[i]));
  const __m512 z2 = _mm512_mul_ps(z, z);
  const __m512 erfc_a = _mm512_mul_ps(t, Exp16(_mm512_sub_ps(p, z2)));
  if (gauss != nullptr) *gauss = Exp16(_mm512_sub_ps(_mm512_setzero_ps(), z2));
  const __mmask16 negative = _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mask_mov_ps(_mm512_sub_ps(_mm512_set1_ps(2.0f), erfc_a), negative, erfc_a);
}

PW_AVX512 void GeluAvx512(const float* x, float* y, int64_t n) {
  const __m512 half = _mm512_set1_ps(0.5f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_mul_ps(half, v), CdfTwice16(v, nullptr)));
  }
  if (i < n) {
    const __mmask16 m = Mask16(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_mul_ps(half, v), CdfTwice16(v, nullptr)));
  }
}

PW_AVX512 inline __m512 SigmoidTimes16(__m512 x, __m512 z) {
  const __m512 e = Exp16(_mm512_sub_ps(_mm512_setzero_ps(), z));
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

PW_AVX512 inline __m512 GeluTanhArg16(__m512 v) {
  const __m512 cubic = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(kGeluTanhCubic), v), _mm512_mul_ps(v, v));
  return _mm512_mul_ps(_mm512_set1_ps(kGeluTanhScale), _mm512_add_ps(v, cubic));
}

PW_AVX512 void SiluMulAvx512(const float* gate, const float* up, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    _mm512_storeu_ps(y + i, _mm512_mul_ps(SigmoidTimes16(g, g), _mm512_loadu_ps(up + i)));
  }
  if (i < n) {
    const __mmask16 m = Mask16(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(SigmoidTimes16(g, g), _mm512_maskz_loadu_ps(m, up + i)));
  }
}

PW_AVX512 void GeluTanhAvx512(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    _mm512_storeu_ps(y + i, SigmoidTimes16(v, GeluTanhArg16(v)));
  }
  if (i < n) {
    const __mmask16 m = Mask16(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    _mm512_mask_storeu_ps(y + i, m, SigmoidTimes16(v, GeluTanhArg16(v)));
  }
}

PW_AVX512 inline __m512 GeluGrad16(__m512 v, __m512 g) {
  __m512 gauss;
  const __m512 cdf = _mm512_mul_ps(_mm512_set1_ps(0.5f), CdfTwice16(v, &gauss));
  const __m512 pdf = _mm512_mul_ps(_mm512_mul_ps(v, _mm512_set1_ps(kInvSqrt2Pi)), gauss);
  return _mm512_mul_ps(g, _mm512_add_ps(cdf, pdf));
}

PW_AVX512 void GeluBackwardAvx512(const float* x, const float* dy, float* dx, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(dx + i, GeluGrad16(_mm512_loadu_ps(x + i), _mm512_loadu_ps(dy + i)));
  }
  if (i < n) {
    const __mmask16 m = Mask16(n - i);
    _mm512_mask_storeu_ps(dx + i, m,
                          GeluGrad16(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, dy + i)));
  }
}

constexpr RowKernels kScalar{SoftmaxScalar, SoftmaxBackwardScalar, GeluScalar, GeluBackwardScalar,
                             SiluMulScalar, GeluTanhScalar};
constexpr RowKernels kAvx2{SoftmaxAvx2, SoftmaxBackwardAvx2, GeluAvx2, GeluBackwardAvx2, SiluMulAvx2, GeluTanhAvx2};
constexpr RowKernels kAvx512{SoftmaxAvx512, SoftmaxBackwardAvx512, GeluAvx512,
                             GeluBackwardAvx512, SiluMulAvx512, GeluTanhAvx512};

}  // namespace

const RowKernels& RowKernelsFor(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512: return kAvx512;
    case KernelIsa::kAvx2: return kAvx2;
    case KernelIsa::kScalar: break;
  }
  return kScalar;
}

}  // namespace pw::fused
