// Fused CPU kernels for the GPT block's non-GEMM work: the causal
// attention core (scores, masked softmax, weighted sum, and their backward
// without the temporaries of the op-by-op formulation) and the GELU MLP
// activation, each a custom autograd Function over hand-vectorised row loops.
//
// Contract:
//   - Only model/gpt_math.cc calls these (training and inference both reach
//     them through it). They compute what the plain LibTorch formulation in
//     gpt_math.cc's fallbacks computes, to fp32 rounding (the kernels'
//     exp/erfc are polynomial approximations with a relative error of a few
//     1e-7, summation orders differ); model/fused_kernels_test.cc checks
//     values and gradients against LibTorch.
//   - Inputs: fp32 CPU tensors whose last dimension has unit stride (other
//     layouts are copied once). FusedKernelsApply says whether a tensor
//     qualifies; callers fall back to LibTorch ops otherwise.
//   - The instruction set is chosen at run time from the CPU (AVX-512F, else
//     AVX2+FMA, else scalar loops); the build needs no -m flags.
//   - Deterministic: the same inputs give the same bits on the same ISA,
//     whatever the thread count (work is split over (batch, head) pairs and
//     elements, never inside a sum).
//   - Thread-safety: pure functions, as any LibTorch op. Shape errors throw
//     c10::Error.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace pw {

enum class KernelIsa { kScalar, kAvx2, kAvx512 };

// The environment variable that lowers the level a process starts at
// (avx512, avx2, scalar): how the suite runs every level a CPU has, and how
// a user reproduces another machine's kernels. A name that is not a level,
// or one above the CPU's, stops the process at start-up with the reason.
inline constexpr const char* kKernelLevelEnv = "PIPEWRIGHT_KERNELS";

// The level the kernels use now: the best the CPU supports, unless
// PIPEWRIGHT_KERNELS or a test chose a lower one. Never blocks.
KernelIsa ActiveKernelIsa();
// "avx512", "avx2", "scalar"; ParseKernelIsa is its inverse (nullopt for
// any other text).
const char* KernelIsaName(KernelIsa isa);
std::optional<KernelIsa> ParseKernelIsa(std::string_view name);
// Whether this process can run `isa`: the CPU has it and PIPEWRIGHT_KERNELS
// does not cap the level below it.
bool CpuSupportsIsa(KernelIsa isa);
// Tests only: run the kernels at `isa` (must be supported), returning the
// previous level. Not for concurrent use with running kernels.
KernelIsa SetKernelIsaForTesting(KernelIsa isa);

// Whether the fused kernels take this tensor (fp32, CPU, strided).
bool FusedKernelsApply(const at::Tensor& x);

// GELU, erf form (at::gelu's default): 0.5 x (1 + erf(x / sqrt 2)), any shape.
// Backward: dy * (Phi(x) + x phi(x)), from the saved input, in one pass.
at::Tensor FusedGelu(const at::Tensor& x);

// CausalAttention without dropout (see gpt_math.h): q [..., n, d] at
// positions [start, start + n), k, v [..., L, d] with the same leading dims,
// L >= start + n; query i sees keys 0 .. start + i (every key when n == 1).
// The attention weights never exist as a separate tensor besides the one
// saved for backward (only when a gradient is wanted), the masked half of
// the score matrix is skipped in blocks, and heads are read and written in
// place ([..., rows, d] with head h at columns [h·hd, (h+1)·hd)): no
// permute copies. Returns [..., n, d].
at::Tensor FusedCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                int64_t start, int n_heads);

// Self-attention of whole sequences from the fused projection qkv [B, T, 3d]
// (q, k, v concatenated on the last dim), start 0 -> [B, T, d]. Same numbers
// as FusedCausalAttention over qkv's three slices; the gradient comes back
// as one [B, T, 3d] tensor (no split/cat in backward).
at::Tensor FusedSelfAttention(const at::Tensor& qkv, int n_heads);

}  // namespace pw
