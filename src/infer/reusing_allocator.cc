#include "infer/reusing_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <string>

#include "os/mapped_region.h"

namespace pw {

// The 64 bytes before every buffer's data: for a large buffer the start of
// its mapping (so the data is 64-byte aligned, mappings being page
// aligned); for a small one the start of its heap block.
struct ReusingCpuAllocator::Header {
  const ReusingCpuAllocator* owner;   // null: a small buffer from the heap
  int64_t bytes;                      // the mapping's length (its size class)
  std::list<Header*>::iterator lru;   // where it sits in lru_ while cached
  int64_t epoch;                      // the SetScratchBudget call it was handed out after
};

namespace {

constexpr int64_t kHeaderBytes = 64;
constexpr int64_t kPageBytes = 4096;
static_assert(sizeof(void*) * 4 <= kHeaderBytes);

// Returns a buffer's mapping (its header is the mapping's start) to the system.
void Unmap(void* mapping, int64_t bytes) { MappedRegion::Adopt(mapping, static_cast<size_t>(bytes)).Reset(); }

}  // namespace

ReusingCpuAllocator::ReusingCpuAllocator(int64_t min_bytes, int64_t scratch_budget_bytes)
    : min_bytes_(std::max<int64_t>(1, min_bytes)) {
  static_assert(sizeof(Header) <= kHeaderBytes);
  stats_.scratch_budget_bytes = std::max<int64_t>(0, scratch_budget_bytes);
}

ReusingCpuAllocator::~ReusingCpuAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  TrimTo(0);
}

int64_t ReusingCpuAllocator::ClassBytes(size_t n) {
  const int64_t total = static_cast<int64_t>(n) + kHeaderBytes;
  int64_t power = 1;
  while (power * 2 <= total) power *= 2;
  const int64_t step = std::max(kPageBytes, power / 8);
  return (total + step - 1) / step * step;
}

c10::DataPtr ReusingCpuAllocator::allocate(size_t n) const {
  if (n == 0) return {nullptr, nullptr, &Release, c10::Device(c10::DeviceType::CPU)};
  if (static_cast<int64_t>(n) < min_bytes_) {
    // From the heap, behind a header that says so (owner null): one
    // deleter serves both kinds, as raw_deallocate needs.
    auto* h = static_cast<Header*>(c10::alloc_cpu(n + kHeaderBytes));
    h->owner = nullptr;
    void* data = reinterpret_cast<char*>(h) + kHeaderBytes;
    return {data, data, &Release, c10::Device(c10::DeviceType::CPU)};
  }
  const int64_t bytes = ClassBytes(n);
  int64_t epoch = 0;  // counted live under this epoch's long-lived/scratch split
  {
    std::lock_guard<std::mutex> lock(mu_);
    epoch = epoch_;
    // The buffer's own class, else the smallest kept one up to twice its
    // size: when a pass's rows shrink one by one (sequences finishing) or
    // vary (prefill chunks), every pass asks for new classes, and mapping
    // each afresh cost a 128-sequence run ~85 k page faults (a 4x scratch
    // budget, which kept those buffers too, decoded 15-20 % faster in two
    // alternated pairs). A larger buffer already mapped costs no more
    // memory than a new one would add.
    auto it = free_by_class_.lower_bound(bytes);
    while (it != free_by_class_.end() && it->first <= 2 * bytes && it->second.empty()) ++it;
    if (it != free_by_class_.end() && it->first <= 2 * bytes) {
      Header* h = it->second.back();
      it->second.pop_back();
      lru_.erase(h->lru);
      stats_.cached_bytes -= h->bytes;
      ++stats_.reuses;
      h->epoch = epoch_;
      NoteScratch();
      void* data = reinterpret_cast<char*>(h) + kHeaderBytes;
      return {data, data, &Release, c10::Device(c10::DeviceType::CPU)};
    }
    // A miss: the pass's shapes changed, so what is cached is the least
    // likely to be asked for again; it makes room for the new buffer.
    TrimTo(CacheLimit(stats_.mapped_bytes - stats_.cached_bytes + bytes));
    ++stats_.maps;
    stats_.mapped_bytes += bytes;
    stats_.mapped_peak_bytes = std::max(stats_.mapped_peak_bytes, stats_.mapped_bytes);
    NoteScratch();
  }
  Result<MappedRegion> region = MappedRegion::Anonymous(static_cast<size_t>(bytes));
  if (!region.ok()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      --stats_.maps;
      stats_.mapped_bytes -= bytes;
    }
    TORCH_CHECK(false, "ReusingCpuAllocator, for a tensor of ", n, " bytes: ", region.status().message(),
                " (the host is out of memory; lower --memory-budget or run fewer ranks here)");
  }
  // Owned by the buffer from here; Keep or TrimTo unmaps it (Unmap).
  void* mapping = region->Release();
  auto* h = static_cast<Header*>(mapping);
  h->owner = this;
  h->bytes = bytes;
  h->epoch = epoch;
  void* data = static_cast<char*>(mapping) + kHeaderBytes;
  return {data, data, &Release, c10::Device(c10::DeviceType::CPU)};
}

c10::DeleterFnPtr ReusingCpuAllocator::raw_deleter() const { return &Release; }

void ReusingCpuAllocator::Release(void* data) {
  if (data == nullptr) return;
  auto* h = reinterpret_cast<Header*>(static_cast<char*>(data) - kHeaderBytes);
  const ReusingCpuAllocator* owner = h->owner;
  if (owner == nullptr) {
    c10::free_cpu(h);
    return;
  }
  std::lock_guard<std::mutex> lock(owner->mu_);
  owner->Keep(h);
}

void ReusingCpuAllocator::NoteScratch() const {
  stats_.scratch_peak_bytes = std::max(
      stats_.scratch_peak_bytes, stats_.mapped_bytes - stats_.cached_bytes - stats_.long_lived_bytes);
}

int64_t ReusingCpuAllocator::CacheLimit(int64_t live) const {
  return std::max<int64_t>(0, stats_.long_lived_bytes + stats_.scratch_budget_bytes - live);
}

void ReusingCpuAllocator::Keep(Header* h) const {
  const int64_t live = stats_.mapped_bytes - stats_.cached_bytes - h->bytes;
  // A long-lived buffer (handed out before the budget was set: a weight
  // cache given up for KV blocks) goes back to the system: its bytes are
  // someone else's now, not scratch room.
  const bool long_lived = h->epoch != epoch_;
  if (long_lived) stats_.long_lived_bytes -= h->bytes;
  const int64_t limit = CacheLimit(live);
  if (long_lived || h->bytes > limit) {
    stats_.mapped_bytes -= h->bytes;
    ++stats_.unmaps;
    Unmap(h, h->bytes);
    return;
  }
  h->lru = lru_.insert(lru_.end(), h);
  free_by_class_[h->bytes].push_back(h);
  stats_.cached_bytes += h->bytes;
  TrimTo(limit);
}

void ReusingCpuAllocator::TrimTo(int64_t cached_limit) const {
  while (stats_.cached_bytes > std::max<int64_t>(0, cached_limit) && !lru_.empty()) {
    Header* h = lru_.front();
    lru_.pop_front();
    std::vector<Header*>& same = free_by_class_[h->bytes];
    same.erase(std::find(same.begin(), same.end(), h));
    stats_.cached_bytes -= h->bytes;
    stats_.mapped_bytes -= h->bytes;
    ++stats_.unmaps;
    Unmap(h, h->bytes);
  }
}

void ReusingCpuAllocator::SetScratchBudget(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.scratch_budget_bytes = std::max<int64_t>(0, bytes);
  const int64_t live = stats_.mapped_bytes - stats_.cached_bytes;
  stats_.long_lived_bytes = live;
  stats_.scratch_peak_bytes = 0;
  ++epoch_;  // every live buffer is long-lived from here on
  TrimTo(CacheLimit(live));
}

ReusingAllocatorStats ReusingCpuAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

namespace {

std::mutex g_install_mu;
ReusingCpuAllocator* g_installed = nullptr;

}  // namespace

ReusingCpuAllocator& InstallReusingCpuAllocator(int64_t scratch_budget_bytes) {
  std::lock_guard<std::mutex> lock(g_install_mu);
  if (g_installed == nullptr) {
    g_installed = new ReusingCpuAllocator(ReusingCpuAllocator::kDefaultMinBytes, scratch_budget_bytes);
    // Above the default allocator's registration (priority 0).
    c10::SetCPUAllocator(g_installed, /*priority=*/1);
  } else {
    g_installed->SetScratchBudget(scratch_budget_bytes);
  }
  return *g_installed;
}

}  // namespace pw
