#include "infer/reusing_allocator.h"

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "os/memory.h"

namespace pw {
namespace {

constexpr int64_t kMiB = 1 << 20;

TEST(ReusingAllocatorTest, SizeClassesAreWholePagesAtMostAnEighthAbove) {
  for (size_t n : {size_t{65536}, size_t{100000}, size_t{393216}, size_t{1} << 20, size_t{3000017}}) {
    const int64_t bytes = ReusingCpuAllocator::ClassBytes(n);
    EXPECT_GE(bytes, static_cast<int64_t>(n) + 64) << n;
    EXPECT_EQ(bytes % 4096, 0) << n;
    EXPECT_LE(bytes, static_cast<int64_t>((n + 64) * 9 / 8) + 4096) << n;
  }
  // Requests a few rows apart share a class: a batch that changes by a
  // sequence reuses the same buffers.
  EXPECT_EQ(ReusingCpuAllocator::ClassBytes(100 * 768 * 4), ReusingCpuAllocator::ClassBytes(99 * 768 * 4));
}

TEST(ReusingAllocatorTest, AFreedBufferServesTheNextRequestOfItsClass) {
  ReusingCpuAllocator alloc(64 * 1024, 8 * kMiB);
  void* first = nullptr;
  {
    c10::DataPtr p = alloc.allocate(kMiB);
    first = p.get();
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    std::memset(first, 1, kMiB);  // the whole buffer is writable
  }
  EXPECT_EQ(alloc.stats().cached_bytes, ReusingCpuAllocator::ClassBytes(kMiB));
  c10::DataPtr again = alloc.allocate(kMiB + 1000);  // the same class
  EXPECT_EQ(again.get(), first);
  const ReusingAllocatorStats s = alloc.stats();
  EXPECT_EQ(s.maps, 1);
  EXPECT_EQ(s.reuses, 1);
  EXPECT_EQ(s.cached_bytes, 0);
  EXPECT_EQ(s.mapped_bytes, ReusingCpuAllocator::ClassBytes(kMiB));
}

TEST(ReusingAllocatorTest, ASmallerRequestTakesAKeptBufferUpToTwiceItsSize) {
  // Rows shrinking pass after pass (sequences finishing) ask for ever new
  // classes; a kept larger buffer serves them instead of a fresh mapping.
  ReusingCpuAllocator alloc(64 * 1024, 8 * kMiB);
  void* big = nullptr;
  {
    c10::DataPtr p = alloc.allocate(kMiB);
    big = p.get();
  }
  {
    c10::DataPtr smaller = alloc.allocate(kMiB * 3 / 4);  // another class, within 2x
    EXPECT_EQ(smaller.get(), big);
    EXPECT_EQ(alloc.stats().mapped_bytes, ReusingCpuAllocator::ClassBytes(kMiB));
  }
  // Back in the cache under its own class, whole.
  EXPECT_EQ(alloc.stats().cached_bytes, ReusingCpuAllocator::ClassBytes(kMiB));
  {
    c10::DataPtr tiny = alloc.allocate(kMiB / 4);  // more than 2x smaller: a mapping of its own
    EXPECT_NE(tiny.get(), big);
  }
  const ReusingAllocatorStats s = alloc.stats();
  EXPECT_EQ(s.maps, 2);
  EXPECT_EQ(s.reuses, 1);
}

TEST(ReusingAllocatorTest, SmallRequestsBypassTheCache) {
  ReusingCpuAllocator alloc(64 * 1024, 8 * kMiB);
  {
    c10::DataPtr p = alloc.allocate(1000);
    ASSERT_NE(p.get(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.get()) % 64, 0u);
    c10::DataPtr none = alloc.allocate(0);
    EXPECT_EQ(none.get(), nullptr);
  }
  const ReusingAllocatorStats s = alloc.stats();
  EXPECT_EQ(s.maps + s.reuses + s.mapped_bytes + s.cached_bytes, 0);
}

TEST(ReusingAllocatorTest, RawAllocationsOfBothKindsAreFreedByTheRawDeleter) {
  // LibTorch's kernels use raw_allocate / raw_deallocate for scratch.
  ReusingCpuAllocator alloc(64 * 1024, 8 * kMiB);
  void* small = alloc.raw_allocate(100);
  void* large = alloc.raw_allocate(kMiB);
  ASSERT_NE(small, nullptr);
  ASSERT_NE(large, nullptr);
  std::memset(large, 3, kMiB);
  alloc.raw_deallocate(small);
  alloc.raw_deallocate(large);
  EXPECT_EQ(alloc.stats().cached_bytes, ReusingCpuAllocator::ClassBytes(kMiB));
  EXPECT_EQ(alloc.raw_allocate(kMiB), large);
  alloc.raw_deallocate(large);
}

TEST(ReusingAllocatorTest, KeepsAtMostTheBudgetOldestDroppedFirst) {
  ReusingCpuAllocator alloc(64 * 1024, 2 * ReusingCpuAllocator::ClassBytes(kMiB));
  void* oldest = nullptr;
  {
    std::vector<c10::DataPtr> live;
    for (int i = 0; i < 3; ++i) live.push_back(alloc.allocate(kMiB));
    oldest = live[0].get();
  }  // freed in order: the first buffer is the oldest in the cache
  ReusingAllocatorStats s = alloc.stats();
  EXPECT_EQ(s.cached_bytes, 2 * ReusingCpuAllocator::ClassBytes(kMiB));
  EXPECT_EQ(s.mapped_bytes, s.cached_bytes);
  EXPECT_EQ(s.unmaps, 1);
  c10::DataPtr a = alloc.allocate(kMiB), b = alloc.allocate(kMiB);
  EXPECT_NE(a.get(), oldest);
  EXPECT_NE(b.get(), oldest);
  // A lower budget gives the rest back at once; a buffer above it is
  // never kept.
  alloc.SetScratchBudget(0);
  { c10::DataPtr c = alloc.allocate(kMiB); }
  s = alloc.stats();
  EXPECT_EQ(s.cached_bytes, 0);
  EXPECT_EQ(s.mapped_bytes, 2 * ReusingCpuAllocator::ClassBytes(kMiB));  // a and b, live
}

TEST(ReusingAllocatorTest, LiveScratchAndKeptBuffersShareTheBudget) {
  const int64_t one = ReusingCpuAllocator::ClassBytes(kMiB);
  const int64_t wide = ReusingCpuAllocator::ClassBytes(3 * kMiB / 2);
  ReusingCpuAllocator alloc(64 * 1024, 0);
  c10::DataPtr kv = alloc.allocate(8 * kMiB);  // long-lived, like the KV cache
  alloc.SetScratchBudget(2 * one);
  EXPECT_EQ(alloc.stats().long_lived_bytes, ReusingCpuAllocator::ClassBytes(8 * kMiB));
  { c10::DataPtr a = alloc.allocate(kMiB), b = alloc.allocate(kMiB); }
  EXPECT_EQ(alloc.stats().cached_bytes, 2 * one);  // the long-lived buffer is not scratch
  {
    c10::DataPtr x = alloc.allocate(kMiB);  // kept: reused
    // A new shape while x is live: scratch would exceed the budget, so the
    // kept buffers go now, not after the pass.
    c10::DataPtr w = alloc.allocate(3 * kMiB / 2);
    const ReusingAllocatorStats s = alloc.stats();
    EXPECT_EQ(s.cached_bytes, 0);
    EXPECT_EQ(s.mapped_bytes, ReusingCpuAllocator::ClassBytes(8 * kMiB) + one + wide);
    EXPECT_EQ(s.scratch_peak_bytes, one + wide);  // over the budget: reported
  }
  // Freed, the two fit no more than the budget: the larger one stays.
  EXPECT_LE(alloc.stats().cached_bytes, 2 * one);
  // The long-lived buffer freed (a weight cache given up for KV blocks) is
  // not kept, and its bytes do not become scratch room.
  const int64_t cached_before = alloc.stats().cached_bytes;
  kv = c10::DataPtr();
  const ReusingAllocatorStats s = alloc.stats();
  EXPECT_EQ(s.long_lived_bytes, 0);
  EXPECT_EQ(s.cached_bytes, cached_before);  // unmapped, even with room in the budget
  EXPECT_EQ(s.mapped_bytes, s.cached_bytes);
}

TEST(ReusingAllocatorTest, ALongLivedBufferFreedIsGivenBackEvenWhenItWouldFit) {
  // A weight cache given up mid-run: its bytes become KV blocks, so keeping
  // them as scratch would count them twice.
  const int64_t one = ReusingCpuAllocator::ClassBytes(kMiB);
  ReusingCpuAllocator alloc(64 * 1024, 8 * one);
  c10::DataPtr slot = alloc.allocate(kMiB);
  { c10::DataPtr kept_before = alloc.allocate(kMiB); }  // cached across the call below
  alloc.SetScratchBudget(8 * one);
  slot = c10::DataPtr();
  ReusingAllocatorStats s = alloc.stats();
  EXPECT_EQ(s.cached_bytes, one);  // the buffer cached before, not the slot
  EXPECT_EQ(s.long_lived_bytes, 0);
  // A buffer cached before the call and handed out after it is scratch.
  { c10::DataPtr reused = alloc.allocate(kMiB); }
  s = alloc.stats();
  EXPECT_EQ(s.cached_bytes, one);
  EXPECT_EQ(s.reuses, 1);
}

TEST(ReusingAllocatorTest, GivesMemoryBackToTheSystem) {
  ReusingCpuAllocator alloc(64 * 1024, 0);
  const Result<ResidentMemory> before = ReadResidentMemory();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  {
    c10::DataPtr p = alloc.allocate(64 * kMiB);
    std::memset(p.get(), 7, 64 * kMiB);
    const Result<ResidentMemory> touched = ReadResidentMemory();
    ASSERT_TRUE(touched.ok());
    EXPECT_GE(touched->anon_bytes() - before->anon_bytes(), 60 * kMiB);
  }
  const Result<ResidentMemory> after = ReadResidentMemory();
  ASSERT_TRUE(after.ok());
  EXPECT_LT(after->anon_bytes() - before->anon_bytes(), 4 * kMiB);
  EXPECT_EQ(alloc.stats().mapped_bytes, 0);
}

TEST(ReusingAllocatorTest, ThreadsAllocatingAndFreeingTogetherLeaveItConsistent) {
  ReusingCpuAllocator alloc(64 * 1024, 4 * kMiB);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&alloc, t] {
      std::mt19937 rng(t);
      std::vector<c10::DataPtr> held;
      for (int i = 0; i < 2000; ++i) {
        const size_t n = 65536 + rng() % (2 * kMiB);
        held.push_back(alloc.allocate(n));
        static_cast<char*>(held.back().get())[n - 1] = 1;  // the last byte is ours
        if (held.size() > 3) held.erase(held.begin() + static_cast<int64_t>(rng() % held.size()));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const ReusingAllocatorStats s = alloc.stats();
  EXPECT_EQ(s.mapped_bytes, s.cached_bytes);
  EXPECT_LE(s.cached_bytes, 4 * kMiB);
  EXPECT_EQ(s.maps + s.reuses, 4 * 2000);
}

TEST(ReusingAllocatorTest, InstalledItServesLibTorchsTensors) {
  ReusingCpuAllocator& alloc = InstallReusingCpuAllocator(16 * kMiB);
  EXPECT_EQ(c10::GetCPUAllocator(), &alloc);  // LibTorch's allocator now
  const ReusingAllocatorStats before = alloc.stats();
  at::Tensor x = at::randn({256, 256}), w = at::randn({512, 256});
  at::Tensor expected;
  for (int pass = 0; pass < 3; ++pass) {
    at::Tensor y = at::gelu(at::linear(x, w));  // 512 KiB results: large
    if (pass == 0) {
      expected = y.clone();
    } else {
      EXPECT_TRUE(at::equal(y, expected));
    }
  }
  const ReusingAllocatorStats after = alloc.stats();
  EXPECT_GT(after.maps, before.maps);
  EXPECT_GT(after.reuses, before.reuses);  // later passes ran in earlier passes' buffers
  EXPECT_EQ(&InstallReusingCpuAllocator(1 * kMiB), &alloc);  // once per process
  EXPECT_EQ(alloc.stats().scratch_budget_bytes, 1 * kMiB);
}

}  // namespace
}  // namespace pw
