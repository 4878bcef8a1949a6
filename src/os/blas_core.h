// Which kernels OpenBLAS runs. Debian's OpenBLAS is built for many CPUs at
// once and picks its kernels from the CPU model when it loads; a model it
// does not know (a virtual "Intel Xeon Processor" with AVX-512, say) gets
// its generic SSE3 kernels, about a quarter of the core's GEMM rate
// (measured: ~25 against 95-135 GFLOP/s, docs/model.md "Kernels").
// OPENBLAS_CORETYPE overrides the choice, but only in the environment the
// library loads in: a program sets it and restarts itself.
//
// Thread-safety: pure, except the readers (which only read).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pw {

// The core type to ask OpenBLAS for: "SkylakeX" when `current` is a generic
// core (OpenBLAS names without AVX2 kernels: Prescott, Core2, Nehalem,
// SandyBridge, ...) and `cpu_flags` has AVX-512 F, CD, BW, DQ and VL;
// "Haswell" when it has AVX2 and FMA; "" when nothing is to gain (a modern
// core already, no such flags, or `current` empty: not OpenBLAS).
std::string BetterBlasCoreType(std::string_view current, const std::vector<std::string>& cpu_flags);

// The "flags" of the first processor in /proc/cpuinfo; empty when unreadable.
std::vector<std::string> CpuFlags();

// The core name of the OpenBLAS this process has loaded
// (openblas_get_corename, looked up at run time); "" with another BLAS.
std::string LoadedBlasCoreName();

}  // namespace pw
