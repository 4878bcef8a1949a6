#include "os/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace pw {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

constexpr int kFinalSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;

}  // namespace

SharedRegion::~SharedRegion() { Reset(); }

SharedRegion::SharedRegion(SharedRegion&& other) noexcept { *this = std::move(other); }

SharedRegion& SharedRegion::operator=(SharedRegion&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
    map_ = std::exchange(other.map_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    sealed_ = std::exchange(other.sealed_, false);
    label_ = std::move(other.label_);
  }
  return *this;
}

void SharedRegion::Reset() {
  if (map_ != nullptr) munmap(map_, static_cast<size_t>(bytes_));
  CloseDescriptor();
  map_ = nullptr;
  bytes_ = 0;
  sealed_ = false;
}

void SharedRegion::CloseDescriptor() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

Result<SharedRegion> SharedRegion::Create(const std::string& label, int64_t bytes) {
  const std::string what = "shared region '" + label + "' (" + std::to_string(bytes) + " B)";
  if (bytes <= 0) return Status::InvalidArgument(what + ": the size must be positive");
  SharedRegion region;
  region.label_ = label;
  region.fd_ = memfd_create(label.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (region.fd_ < 0) return Status::IoError(Errno(what + ": memfd_create"));
  if (ftruncate(region.fd_, bytes) != 0) return Status::IoError(Errno(what + ": ftruncate"));
  // Reserve every page now: a tmpfs page that cannot be had at first touch
  // is a SIGBUS, which no caller could turn into a message.
  if (const int err = posix_fallocate(region.fd_, 0, bytes); err != 0) {
    const std::string text = std::strerror(err);
    if (err == ENOSPC || err == ENOMEM) {
      return Status::FailedPrecondition(what + ": the host cannot hold it (" + text +
                                        "); free memory or lower the size");
    }
    return Status::IoError(what + ": posix_fallocate: " + text);
  }
  region.bytes_ = bytes;
  return region;
}

Status SharedRegion::Write(int64_t offset, const void* data, int64_t size) {
  const std::string what = "shared region '" + label_ + "'";
  if (fd_ < 0 || map_ != nullptr || sealed_) {
    return Status::FailedPrecondition(what + ": write before Seal, on a region from Create");
  }
  if (offset < 0 || size < 0 || offset + size > bytes_) {
    return Status::InvalidArgument(what + ": writing " + std::to_string(size) + " B at " + std::to_string(offset) +
                                   " goes past its " + std::to_string(bytes_) + " B");
  }
  const auto* from = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = pwrite(fd_, from, static_cast<size_t>(size), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::IoError(Errno(what + ": pwrite"));
    from += n;
    offset += n;
    size -= n;
  }
  return Status::Ok();
}

Status SharedRegion::Seal() {
  const std::string what = "shared region '" + label_ + "'";
  if (fd_ < 0 || sealed_) return Status::FailedPrecondition(what + ": seal once, a region from Create");
  if (fcntl(fd_, F_ADD_SEALS, kFinalSeals) != 0) return Status::IoError(Errno(what + ": sealing"));
  sealed_ = true;
  void* map = mmap(nullptr, static_cast<size_t>(bytes_), PROT_READ, MAP_SHARED, fd_, 0);
  if (map == MAP_FAILED) return Status::IoError(Errno(what + ": mmap"));
  map_ = map;
  return Status::Ok();
}

std::string SharedRegion::address() const {
  return std::to_string(getpid()) + "/" + std::to_string(fd_);
}

Result<SharedRegion> SharedRegion::Open(const std::string& address, int64_t bytes) {
  const std::string what = "shared region " + address;
  const size_t slash = address.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == address.size() ||
      address.find_first_not_of("0123456789/") != std::string::npos) {
    return Status::InvalidArgument(what + ": an address is <pid>/<fd>");
  }
  const std::string path = "/proc/" + address.substr(0, slash) + "/fd/" + address.substr(slash + 1);
  SharedRegion region;
  region.label_ = address;
  // O_NONBLOCK: where the address names a FIFO or a device (another host's
  // pid/fd), opening must fail or return, never wait.
  region.fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (region.fd_ < 0) {
    const int err = errno;
    const std::string text = Errno(what + ": opening " + path);
    // Out of descriptors or memory is this process's trouble; anything else
    // (no such pid or fd, a socket or another process's file there, no
    // permission) means the address does not name a region visible here.
    if (err == EMFILE || err == ENFILE || err == ENOMEM) return Status::IoError(text);
    return Status::NotFound(text + " (its creator is not a process of this host and PID namespace, "
                                   "or it closed the region)");
  }
  struct stat st {};
  if (fstat(region.fd_, &st) != 0) return Status::IoError(Errno(what + ": fstat"));
  if (st.st_size != bytes) {
    return Status::InvalidArgument(what + ": holds " + std::to_string(st.st_size) + " B, expected " +
                                   std::to_string(bytes));
  }
  const int seals = fcntl(region.fd_, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_WRITE) == 0) {
    return Status::InvalidArgument(what + ": not a sealed region (its bytes could still change)");
  }
  void* map = mmap(nullptr, static_cast<size_t>(bytes), PROT_READ, MAP_SHARED, region.fd_, 0);
  if (map == MAP_FAILED) return Status::IoError(Errno(what + ": mmap"));
  region.map_ = map;
  region.bytes_ = bytes;
  region.sealed_ = true;
  region.CloseDescriptor();
  return region;
}

}  // namespace pw
