// MappedRegion: memory straight from the kernel (mmap), returned to it
// (munmap) when the region is destroyed. Anonymous regions: pages are zero
// and not resident until touched; the inference allocator maps its tensor
// buffers this way, so freeing one gives the memory back at once instead of
// leaving it in the C allocator's heap. File regions (read-only): a
// checkpoint's bytes are read from disk only where touched, so a pipeline
// stage that reads its own layers' tensors never reads the others'.
//
// Thread-safety: a plain value; one owner at a time. The bytes may be used
// from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "core/status.h"

namespace pw {

class MappedRegion {
 public:
  MappedRegion() = default;
  ~MappedRegion() { Reset(); }
  MappedRegion(MappedRegion&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  MappedRegion& operator=(MappedRegion&& other) noexcept;
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  // Maps `bytes` (> 0) readable and writable. Never blocks on I/O.
  // FailedPrecondition with the system's reason (ENOMEM: the host or the
  // address-space limit is out of memory).
  static Result<MappedRegion> Anonymous(size_t bytes);

  // Maps the whole file at `path` read-only (private). Blocks on opening
  // the file only. NotFound / IoError naming the file; an empty file maps
  // to an empty region (data() null).
  static Result<MappedRegion> ReadOnlyFile(const std::string& path);

  // Takes ownership of a mapping that Release() gave up: `data` and `bytes`
  // exactly as they were.
  static MappedRegion Adopt(void* data, size_t bytes) { return MappedRegion(data, bytes); }

  void* data() const { return data_; }
  size_t size() const { return bytes_; }

  // Gives up ownership without unmapping; returns the address. The caller
  // unmaps it later through Adopt.
  void* Release();

  // Unmaps now (if anything is mapped).
  void Reset();

 private:
  MappedRegion(void* data, size_t bytes) : data_(data), bytes_(bytes) {}

  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace pw
