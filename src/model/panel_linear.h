// Linear layers in one fixed summation order: pipewright's own kernels for
// batch-invariant inference (docs/inference.md "Batch invariance").
//
// Why: a BLAS picks its kernel, its blocking and its summation order from
// the shape of each call, the CPU and its own build: the same row summed
// beside 5 rows or 128 can round differently, and which shapes do so
// differs between OpenBLAS's Haswell, Zen and SkylakeX kernels and oneDNN's
// ISA levels. Here every output element is
//
//   y[r, o] = ((fma(x[r, in-1], w[o, in-1], ... fma(x[r, 0], w[o, 0], 0)))
//              + bias[o]) + residual[r, o]
//
// one fused multiply-add per k, k ascending, one accumulator, then the bias
// and the residual (each one rounded addition, in that order) — whatever
// the row count, the row's place, the tile that computes it or the
// instruction set. The AVX-512, AVX2+FMA and scalar kernels therefore give
// the same bits (panel_linear_test.cc checks it on every level the CPU
// runs); they differ only in how many elements advance at once.
//
// The weight is read in the panel layout: outputs in panels of
// kPanelWidth, each panel's weights k-major, so that one k step of a
// panel is one contiguous vector (16 floats: one AVX-512 register or two
// AVX2 registers). The layout depends on nothing but (out, in): every
// machine packs a weight the same way, so packed weights travel between
// ranks as they are. A packed weight holds exactly out * in values: fp32,
// bf16 (half the bytes to stream; each value widened exactly to fp32
// before its FMA, so a bf16 weight computes what its fp32 widening would),
// or int8 with one fp32 scale per output (a quarter of the bytes;
// symmetric, per output channel: w[o, k] ~ q[o, k] * scale[o]). An int8
// weight's q is widened exactly to fp32 and the scale applied once, to the
// finished chain:
//
//   y[r, o] = ((chain over k of fma(x[r, k], q[o, k])) * scale[o] + bias[o]) + residual[r, o]
//
// which is again one order per element, the same on every level.
//
// Thread-safety: pure functions over caller-owned memory; any threads may
// call them on disjoint outputs. No allocation. Misuse (sizes) is the
// caller's contract: checked by the tensor wrappers (infer/layer_math.cc).
#pragma once

#include <cstdint>

#include "model/fused_kernels.h"

namespace pw {

// Outputs per panel: one AVX-512 register of fp32.
constexpr int64_t kPanelWidth = 16;

// Packs w [out, in] (row-major, as nn.Linear holds it) into `packed`
// (out * in floats; may not overlap w): panel p holds outputs
// [16p, 16p + n), n = min(16, out - 16p), element (o, k) at
// 16p * in + k * n + (o - 16p).
void PackPanels(const float* w, int64_t out, int64_t in, float* packed);
// The inverse of PackPanels.
void UnpackPanels(const float* packed, int64_t out, int64_t in, float* w);
// Row o of the unpacked weight (w[o, 0..in)) into dst[0..in): the embedding
// lookup of a tied head that is held packed.
void PanelWeightRow(const float* packed, int64_t out, int64_t in, int64_t o, float* dst);

// bf16 as its 16 bits: the upper half of an fp32.
using Bf16Bits = uint16_t;
// fp32 -> bf16, rounded to nearest even (NaN kept a NaN); bf16 -> fp32 is exact.
Bf16Bits ToBf16(float x);
float FromBf16(Bf16Bits b);
// PackPanels into bf16: each value rounded by ToBf16, the same layout.
void PackPanelsBf16(const float* w, int64_t out, int64_t in, Bf16Bits* packed);
// PackPanels of a weight held in bf16 already (a bf16 checkpoint): no rounding.
void PackPanelsFromBf16(const Bf16Bits* w, int64_t out, int64_t in, Bf16Bits* packed);

// Per-output symmetric int8 of w [out, in]: scale[o] = max_k |w[o, k]| /
// 127 (0 for an all-zero row), q = round-half-even(w / scale) in
// [-127, 127], packed in the panel layout; scales[out] in output order.
// Non-finite weights are the caller's contract (they have no int8 form).
void PackPanelsInt8(const float* w, int64_t out, int64_t in, int8_t* packed, float* scales);
// Row o of a packed weight, widened to fp32 (bf16 exactly; int8 as
// q * scale[o], the value the kernels' scaling approximates).
void PanelWeightRow(const Bf16Bits* packed, int64_t out, int64_t in, int64_t o, float* dst);
void PanelWeightRow(const int8_t* packed, const float* scales, int64_t out, int64_t in, int64_t o, float* dst);

// The operands of one call. x [rows, in] with row stride ldx; y [rows, out]
// with row stride ldy (may alias neither x nor packed); bias [out] or null;
// residual [rows, out] with row stride ldr, or null (may alias y).
struct PanelLinearArgs {
  const float* x = nullptr;
  int64_t rows = 0, ldx = 0;
  const float* packed = nullptr;        // the weight in fp32 panels, or
  const Bf16Bits* packed_bf16 = nullptr;  // in bf16 panels, or
  const int8_t* packed_int8 = nullptr;    // in int8 panels (exactly one of the three)
  const float* scales = nullptr;          // [out]: with packed_int8, and only then
  int64_t out = 0, in = 0;
  const float* bias = nullptr;
  const float* residual = nullptr;
  int64_t ldr = 0;
  float* y = nullptr;
  int64_t ldy = 0;
};

// y = x W^T + bias + residual in the fixed order above, with the kernels of
// `isa` (the CPU must support it: CpuSupportsIsa). Blocks while computing,
// on the calling thread.
void PanelLinear(KernelIsa isa, const PanelLinearArgs& args);

}  // namespace pw
