// Fused CPU kernels for the Llama-family pieces of the block: RMSNorm and
// the rotation of q and k with the grouped key/value heads expanded, each a
// custom autograd Function over one row loop. Unfused, each is a chain of
// small LibTorch ops (RMSNorm: square, mean, add, rsqrt, two products;
// rotation: per q and k two narrows, four products, a sum, a difference and
// a concatenation, then a concatenation of q|k|v and the repeated heads),
// whose dispatch and temporaries cost a block of the yardstick's width more
// than the arithmetic (docs/models.md, "Speed").
//
// Contract (as model/fused_kernels.h): only model/gpt_math.cc calls these;
// they compute what its LibTorch formulation computes, to fp32 rounding
// (sums in another order); model/fused_llama_kernels_test.cc checks values
// and gradients against it. Inputs fp32 on the CPU (FusedKernelsApply);
// other layouts are copied once. Deterministic: rows in order, one thread
// per row range, no sum split across threads (the norm weight's gradient
// sums rows in order on the calling thread). Thread-safety: pure functions.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace pw {

// x * rsqrt(mean(x², -1) + eps) * weight over the last dimension; weight
// [d]. Backward: dx and dweight from the saved input and per-row scale.
at::Tensor FusedRmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps);

// qkv [B, T, d + 2·kv] (q, then n_kv_heads key heads, then as many value
// heads, each head_dim = d / n_heads wide) -> [B, T, 3d]: q and k rotated
// in the half layout (pairs i and i + head_dim/2) by cos/sin [T, head_dim/2]
// of positions 0 .. T-1, and each key and value head repeated for the
// n_heads / n_kv_heads query heads it serves — what FusedSelfAttention
// reads. Backward: the inverse rotation, the repeated heads' gradients
// summed.
at::Tensor FusedRotaryQkv(const at::Tensor& qkv, const at::Tensor& cos, const at::Tensor& sin, int n_heads,
                          int n_kv_heads);

}  // namespace pw
