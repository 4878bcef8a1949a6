// Linear layers over weights packed once, at load, in the blocked layout of
// oneDNN's matmul (Debian's libdnnl, the library LibTorch itself links), so
// that a forward pass no longer re-packs every weight on every call.
//
// Why: a decode pass multiplies [rows, d] activations by each block's
// weights with rows = the running sequences (128 at most in the bench).
// OpenBLAS packs the whole weight matrix into its kernel layout on every
// call, and at 128 rows that packing (sgemm_incopy) took 11 % of a decode
// pass next to 34 % in the kernel (perf, 128 sequences). Packed once, the
// same four linears of a block, 8 layers' weights in turn, run faster at
// every row count but one (bench/prepacked_linear_torch_bench); the bias,
// the GELU and the residual add run inside the matmul (oneDNN post-ops),
// not as passes of their own.
//
// The layout is oneDNN's choice for this CPU: blocks computed where they
// are held (replicate, CaS owners, shared memory on one host) are always
// packed; blocks that travel (WaS, auto) only when every rank reports the
// same layout (PrepackedLayoutSignature), so that the receiver reads them
// as they are. A packed weight has exactly the plain weight's element count
// (PrepackableLinear checks), so packing is in place and the memory plan is
// unchanged.
//
// Thread-safety: PrepackableLinear and PrepackLinearWeight are pure; PrepackedLinear
// keeps its compiled kernels per thread (each thread its own cache), so any
// threads may call it. Failure: misuse (shapes, a layout that does not
// match) is a PW_CHECK; a oneDNN error is rethrown as c10::Error with its
// message (the pool turns it into a Status naming the block).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace pw {

// What follows x W^T (+ b) inside the matmul.
enum class LinearEpilogue {
  kNone,      // y = x W^T + b
  kGelu,      // y = GELU(x W^T + b), erf form (at::gelu's default)
  kResidual,  // y = x W^T + b + residual
};

// True when a weight of [out, in] fp32 can be packed on this CPU: oneDNN
// has a blocked (brgemm) kernel for it — AVX-512 CPUs; elsewhere OpenBLAS
// is left to do the work — and the packed layout holds exactly out * in
// floats. The answer is the same for every call on one machine. Pure.
bool PrepackableLinear(int64_t out, int64_t in);

// What the packed layout of [out, in] is on this machine, as text (oneDNN's
// version, the CPU's instruction set, the layout's blocking); "" when not
// packable. Ranks whose signatures for every shape agree read each other's
// packed weights as they are. Pure.
std::string PrepackedLayoutSignature(int64_t out, int64_t in);

// Writes the packed form of `weight` ([out, in] contiguous fp32, as
// nn.Linear holds it) into `packed` (out * in fp32, contiguous; may not
// overlap `weight`). PrepackableLinear(out, in) must hold. Blocks while copying.
void PrepackLinearWeight(const at::Tensor& weight, at::Tensor& packed);

// y [rows, out] = epilogue(x W^T + bias): x [rows, in] fp32 contiguous,
// `packed` what PrepackLinearWeight wrote for W [out, in], bias [out] or
// undefined, residual [rows, out] contiguous for kResidual (ignored
// otherwise). The same numbers as at::linear to fp32 rounding (a different
// summation order). Blocks while computing.
at::Tensor PrepackedLinear(const at::Tensor& x, const at::Tensor& packed, int64_t out,
                           const at::Tensor& bias, LinearEpilogue epilogue,
                           const at::Tensor& residual = at::Tensor());

}  // namespace pw
