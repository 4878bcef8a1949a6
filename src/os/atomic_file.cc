#include "os/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "os/fault_seam.h"

namespace pw {
namespace {

std::string Reason() { return std::strerror(errno); }

// After a rename the new directory entry is durable only once the
// directory itself is synced.
Status SyncDirectoryOf(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return Status::IoError("cannot open directory " + dir.string() + " to sync it: " + Reason());
  if (::fsync(fd.get()) != 0) return Status::IoError("cannot sync directory " + dir.string() + ": " + Reason());
  return Status::Ok();
}

}  // namespace

AtomicFile::AtomicFile(std::string path, bool durable)
    : path_(std::move(path)), tmp_(path_ + ".tmp"), durable_(durable) {}

AtomicFile::~AtomicFile() { Abandon(); }

void AtomicFile::Abandon() {
  if (!fd_.valid()) return;
  fd_.Reset();
  std::remove(tmp_.c_str());
}

Status AtomicFile::Open() {
  PW_CHECK(!fd_.valid(), "AtomicFile::Open called twice");
  fd_.Reset(::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd_.valid()) return Status::IoError("cannot write " + tmp_ + ": " + Reason());
  bytes_ = 0;
  return Status::Ok();
}

Status AtomicFile::Write(std::string_view bytes) {
  PW_CHECK(fd_.valid(), "AtomicFile::Write before Open");
  const char* data = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const int faked = FakedWriteErrno();  // os/fault_seam.h: a test's full disk
    if (faked != 0) errno = faked;
    const ssize_t n = faked != 0 ? -1 : ::write(fd_.get(), data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string reason = n < 0 ? Reason() : "no progress";
      Abandon();
      return Status::IoError("cannot write " + tmp_ + " after " + std::to_string(bytes_) + " bytes: " + reason +
                             " (disk full?)");
    }
    data += n;
    left -= static_cast<size_t>(n);
    bytes_ += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status AtomicFile::Commit() {
  PW_CHECK(fd_.valid(), "AtomicFile::Commit without a successful Open");
  if (durable_ && ::fsync(fd_.get()) != 0) {
    const std::string reason = Reason();
    Abandon();
    return Status::IoError("cannot sync " + tmp_ + ": " + reason + " (disk full?)");
  }
  if (fd_.Close() != 0) {
    const std::string reason = Reason();
    std::remove(tmp_.c_str());
    return Status::IoError("cannot close " + tmp_ + ": " + reason);
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const std::string reason = Reason();
    std::remove(tmp_.c_str());
    return Status::IoError("cannot rename " + tmp_ + " to " + path_ + ": " + reason);
  }
  if (durable_) return SyncDirectoryOf(path_);
  return Status::Ok();
}

Status WriteFile(const std::string& path, std::string_view bytes, Durability durability) {
  namespace fs = std::filesystem;
  if (path.empty()) return Status::InvalidArgument("output path is empty; give a file name");
  const fs::path target(path);
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::error_code ec;
  // Checked up front so the message says which directory is missing rather
  // than a bare "No such file or directory" about the .tmp file.
  if (!fs::exists(dir, ec)) {
    return Status::IoError("cannot write '" + path + "': directory '" + dir.string() +
                           "' does not exist; create it first or choose another path");
  }
  if (!fs::is_directory(dir, ec)) {
    return Status::IoError("cannot write '" + path + "': '" + dir.string() + "' is not a directory");
  }
  if (fs::is_directory(target, ec)) {
    return Status::IoError("cannot write '" + path + "': it is a directory; give a file name");
  }
  AtomicFile file(path, durability == Durability::kDurable);
  PW_RETURN_IF_ERROR(file.Open());
  PW_RETURN_IF_ERROR(file.Write(bytes));
  return file.Commit();
}

}  // namespace pw
