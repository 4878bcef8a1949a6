// ReusingCpuAllocator: LibTorch's CPU allocator for inference workers, which
// keeps the large buffers a forward pass frees for the next pass.
//
// Why: a pass allocates and frees the same few large intermediates (qkv,
// the MLP's hidden layer, ...) layer after layer, pass after pass. glibc
// serves them from its heap once its mmap threshold has grown past them and
// then keeps what fragments there: a rank's resident peak ended 15-40 %
// above its memory plan. Making glibc map every large buffer afresh
// (MALLOC_MMAP_THRESHOLD_) keeps the peak at the plan but cost one rank at
// 128 sequences 10-14 % of its tokens per second in page faults. This
// allocator maps large buffers itself, in size classes, and keeps freed
// ones for the next request of the same class, or of a class down to half
// as large (rows that shrink pass by pass as sequences finish): no faults
// in the steady state.
//
// What it keeps is bounded by a scratch budget (the memory plan's
// workspace): the large buffers live beyond those held when the budget was
// set (the KV cache, the weights) plus the freed ones kept stay within it,
// least recently freed dropped first. So the cache fills what the live
// intermediates leave of the workspace and shrinks as they grow, and the
// resident peak stays where the plan put it.
//
// Large means at least `min_bytes`; smaller requests go to the heap
// (c10::alloc_cpu, as LibTorch's default allocator), 64 bytes more for a
// header. Buffers are 64-byte aligned (LibTorch's CPU alignment).
//
// Thread-safety: allocate and the deleters it hands out may run on any
// thread (LibTorch frees tensors wherever their last reference goes); one
// mutex guards the cache. stats and SetScratchBudget are thread-safe too.
#pragma once

#include <c10/core/Allocator.h>

#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <vector>

namespace pw {

struct ReusingAllocatorStats {
  int64_t mapped_bytes = 0;       // large buffers mapped now (live + cached)
  int64_t mapped_peak_bytes = 0;  // the most mapped at once
  int64_t cached_bytes = 0;       // of mapped_bytes, freed and kept for reuse
  int64_t scratch_budget_bytes = 0;
  int64_t long_lived_bytes = 0;   // live when the budget was set, less those freed since
  int64_t scratch_peak_bytes = 0; // the most live beyond long_lived_bytes (kept excluded)
  int64_t reuses = 0;             // large requests served from the cache
  int64_t maps = 0;               // large requests that mapped fresh memory
  int64_t unmaps = 0;             // buffers given back to the system
};

class ReusingCpuAllocator final : public c10::Allocator {
 public:
  // A decode pass of 16 sequences makes 16-64 KiB rows of activations; below
  // this, the heap does well enough (measured: 1-2 % of the peak).
  static constexpr int64_t kDefaultMinBytes = 16 * 1024;

  // Requests of at least `min_bytes` (> 0) are large; freed large buffers
  // are kept while the live ones plus the kept ones stay within
  // `scratch_budget_bytes` (>= 0).
  ReusingCpuAllocator(int64_t min_bytes, int64_t scratch_budget_bytes);
  // Unmaps the cache. Must outlive every buffer it handed out (an
  // installed allocator is never destroyed).
  ~ReusingCpuAllocator() override;

  // A buffer of at least n bytes (nullptr for n == 0). Throws c10::Error
  // when the system refuses memory, as LibTorch's default allocator does.
  c10::DataPtr allocate(size_t n) const override;
  // Frees what allocate returned, given its data pointer (LibTorch's
  // raw_allocate / raw_deallocate use it).
  c10::DeleterFnPtr raw_deleter() const override;

  // The large buffers live now are long-lived (not scratch) from here on,
  // and scratch (live beyond them + kept) is held within `bytes`; kept
  // buffers beyond it are unmapped now. A long-lived buffer freed later (a
  // weight cache given up) is unmapped, never kept: its bytes do not
  // become scratch room.
  void SetScratchBudget(int64_t bytes);
  ReusingAllocatorStats stats() const;

  // The bytes a large request of n bytes maps (header included): n rounded
  // up to its size class (steps of 1/8 of a power of two, whole pages).
  static int64_t ClassBytes(size_t n);

 private:
  struct Header;  // at the start of every large buffer's mapping
  static void Release(void* data);
  // The cache is mutable state behind mu_: allocate is const in
  // c10::Allocator, and the deleters reach the allocator through a const
  // pointer in each buffer's header.
  void Keep(Header* header) const;     // holds mu_
  // The most that may stay cached with `live` bytes of large buffers live.
  int64_t CacheLimit(int64_t live) const;  // holds mu_
  void NoteScratch() const;            // holds mu_; after live grew
  void TrimTo(int64_t cached_limit) const;  // holds mu_

  const int64_t min_bytes_;
  mutable std::mutex mu_;
  int64_t epoch_ = 0;  // SetScratchBudget calls so far (written under mu_)
  // Freed buffers by class, and all of them oldest first (the eviction order).
  mutable std::map<int64_t, std::vector<Header*>> free_by_class_;
  mutable std::list<Header*> lru_;
  mutable ReusingAllocatorStats stats_;
};

// Makes one process-wide ReusingCpuAllocator LibTorch's CPU allocator (for
// every tensor allocated from then on; earlier tensors keep their own
// deleters) and returns it, its scratch budget `scratch_budget_bytes`. A
// second call returns the same instance with SetScratchBudget applied. Never
// destroyed. Thread-safe.
ReusingCpuAllocator& InstallReusingCpuAllocator(int64_t scratch_budget_bytes);

}  // namespace pw
