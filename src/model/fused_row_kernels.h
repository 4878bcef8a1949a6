// The row loops under model/fused_kernels.h, one set per instruction-set
// level (scalar, AVX2+FMA, AVX-512F), picked at run time. fused_kernels.cc
// drives them for training; infer/paged_attention.cc uses the same softmax
// so that inference rounds exactly as training does; fused_kernels_test.cc
// runs every set the CPU supports. Raw pointers, unit stride, no
// allocation; pure.
#pragma once

#include <cstdint>

#include "model/fused_kernels.h"

namespace pw::fused {

struct RowKernels {
  // Row s[0, length): s[0, valid) <- softmax(s[0, valid)), s[valid, length)
  // <- 0 (the masked future). valid >= 1.
  void (*softmax)(float* s, int64_t valid, int64_t length);
  // Softmax backward in place: g[j] <- p[j] (g[j] - sum_i<valid p[i] g[i])
  // for j < valid, 0 for valid <= j < length.
  void (*softmax_backward)(const float* p, float* g, int64_t valid, int64_t length);
  // y[i] = gelu(x[i]) (erf form), i < n.
  void (*gelu)(const float* x, float* y, int64_t n);
  // dx[i] = dy[i] * gelu'(x[i]), i < n. dx may alias dy.
  void (*gelu_backward)(const float* x, const float* dy, float* dx, int64_t n);
  // y[i] = silu(gate[i]) * up[i] (SwiGLU), i < n. Inference only.
  void (*silu_mul)(const float* gate, const float* up, float* y, int64_t n);
  // y[i] = gelu(x[i]), tanh form, as x sigmoid(2u), i < n. Inference only.
  void (*gelu_tanh)(const float* x, float* y, int64_t n);
  // Every kernel computes each element with the same arithmetic wherever
  // it sits (the vector sets' tails are masked vectors, not scalar loops):
  // an element's bits depend on its value and the level alone.
};

// The set for `isa`; the CPU must support it.
const RowKernels& RowKernelsFor(KernelIsa isa);

}  // namespace pw::fused
