#include "runtime/allocator_stats.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <malloc.h>

#include <atomic>

namespace pw {
namespace {

std::atomic<bool> g_installed{false};
std::atomic<int64_t> g_current{0};
std::atomic<int64_t> g_peak{0};

void RaisePeak(int64_t now) {
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void CountingFree(void* ptr) {
  if (ptr == nullptr) return;
  g_current.fetch_sub(static_cast<int64_t>(malloc_usable_size(ptr)), std::memory_order_relaxed);
  c10::free_cpu(ptr);
}

class CountingCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) const override {
    void* ptr = c10::alloc_cpu(nbytes);  // throws c10::Error when out of memory
    if (ptr != nullptr) {
      const int64_t size = static_cast<int64_t>(malloc_usable_size(ptr));
      RaisePeak(g_current.fetch_add(size, std::memory_order_relaxed) + size);
    }
    return {ptr, ptr, &CountingFree, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &CountingFree; }
};

}  // namespace

void InstallCountingCpuAllocator() {
  if (g_installed.exchange(true)) return;
  // Never destroyed: tensors may outlive every scope that could own it.
  static CountingCpuAllocator* allocator = new CountingCpuAllocator();
  c10::SetCPUAllocator(allocator, /*priority=*/1);
}

AllocatorStats CpuAllocatorStats() {
  return {g_installed.load(std::memory_order_relaxed), g_current.load(std::memory_order_relaxed),
          g_peak.load(std::memory_order_relaxed)};
}

void ResetCpuAllocatorPeak() { g_peak.store(g_current.load(std::memory_order_relaxed), std::memory_order_relaxed); }

}  // namespace pw
