// Allocator statistics for LibTorch's CPU tensors: the bytes held by live
// tensors now and at their peak, so that a training step can report its
// measured memory beside the simulator's prediction.
//
// LibTorch 1.13 keeps no such counts for CPU memory, so
// InstallCountingCpuAllocator puts a thin allocator in front of the default
// one (c10::SetCPUAllocator): the same aligned allocation (c10::alloc_cpu)
// plus two relaxed atomic updates per allocation and per free. Sizes are
// the allocator's usable sizes (malloc_usable_size), which may round each
// request up by a few bytes.
//
// Tensors allocated before the installation are freed by their own deleter
// and never counted. Thread-safe: any thread may allocate, free or read.
#pragma once

#include <cstdint>

namespace pw {

// Installs the counting allocator as LibTorch's CPU allocator; later calls
// do nothing. Call early in a process (before the model is built), from
// one thread.
void InstallCountingCpuAllocator();

struct AllocatorStats {
  bool counting = false;      // false until InstallCountingCpuAllocator
  int64_t current_bytes = 0;  // held by live CPU tensors allocated since then
  int64_t peak_bytes = 0;     // the most since then or the last ResetAllocatorPeak
};

AllocatorStats CpuAllocatorStats();

// Lowers the peak to the current bytes (start of a measured interval).
void ResetCpuAllocatorPeak();

}  // namespace pw
