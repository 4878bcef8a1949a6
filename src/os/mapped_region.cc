#include "os/mapped_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "os/unique_fd.h"

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

Result<MappedRegion> MappedRegion::ReadOnlyFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound("no such file: " + path);
    return Status::IoError("cannot open " + path + ": " + std::strerror(err));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return Status::IoError("cannot stat " + path + ": " + std::strerror(errno));
  if (!S_ISREG(info.st_mode)) return Status::IoError(path + " is not a regular file");
  const size_t bytes = static_cast<size_t>(info.st_size);
  if (bytes == 0) return MappedRegion();
  void* data = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (data == MAP_FAILED) return Status::IoError("cannot map " + path + ": " + std::strerror(errno));
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
