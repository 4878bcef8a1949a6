// Fnv1a64: a fast non-cryptographic 64-bit hash of bytes (FNV-1a), for
// bucketing and for stable keys derived from text (the same bytes give the
// same value on every machine and run, unlike std::hash). Callers that need
// exactness compare the hashed contents as well.
//
// Thread-safety: pure.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pw {

inline constexpr uint64_t kFnv1a64Basis = 1469598103934665603ULL;

// Continues hash `h` (kFnv1a64Basis to start) over `n` bytes at `data`.
inline uint64_t Fnv1a64(const void* data, size_t n, uint64_t h = kFnv1a64Basis) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace pw
