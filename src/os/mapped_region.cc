#include "os/mapped_region.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace pw {

MappedRegion& MappedRegion::operator=(MappedRegion&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Result<MappedRegion> MappedRegion::Anonymous(size_t bytes) {
  if (bytes == 0) return Status::InvalidArgument("cannot map 0 bytes");
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) {
    return Status::FailedPrecondition("cannot map " + std::to_string(bytes) + " bytes: " + std::strerror(errno));
  }
  return MappedRegion(data, bytes);
}

void* MappedRegion::Release() {
  bytes_ = 0;
  return std::exchange(data_, nullptr);
}

void MappedRegion::Reset() {
  if (data_ != nullptr) ::munmap(data_, bytes_);
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace pw
