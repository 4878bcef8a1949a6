#include "model/durable_file.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace pw {
namespace {

std::string Hex(const unsigned char* digest, unsigned int length) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += kDigits[digest[i] >> 4];
    out += kDigits[digest[i] & 15];
  }
  return out;
}

std::string Reason() { return std::strerror(errno); }

// After a rename the new directory entry is durable only once the
// directory itself is synced.
Status SyncDirectoryOf(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::IoError("cannot open directory " + dir.string() + " to sync it: " + Reason());
  const bool ok = ::fsync(fd) == 0;
  const std::string reason = ok ? "" : Reason();
  ::close(fd);
  if (!ok) return Status::IoError("cannot sync directory " + dir.string() + ": " + reason);
  return Status::Ok();
}

}  // namespace

std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  PW_CHECK(EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) == 1,
           "OpenSSL SHA-256 failed");
  return Hex(digest, length);
}

DurableFileWriter::DurableFileWriter(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {}

DurableFileWriter::~DurableFileWriter() { Abandon(); }

void DurableFileWriter::Abandon() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    std::remove(tmp_.c_str());
  }
  if (sha_ != nullptr) {
    EVP_MD_CTX_free(sha_);
    sha_ = nullptr;
  }
}

Status DurableFileWriter::Open() {
  PW_CHECK(fd_ < 0, "DurableFileWriter::Open called twice");
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return Status::IoError("cannot write " + tmp_ + ": " + Reason());
  sha_ = EVP_MD_CTX_new();
  PW_CHECK(sha_ != nullptr && EVP_DigestInit_ex(sha_, EVP_sha256(), nullptr) == 1, "OpenSSL SHA-256 init failed");
  bytes_ = 0;
  return Status::Ok();
}

Status DurableFileWriter::Write(std::string_view bytes) {
  PW_CHECK(fd_ >= 0, "DurableFileWriter::Write before Open");
  PW_CHECK(EVP_DigestUpdate(sha_, bytes.data(), bytes.size()) == 1, "OpenSSL SHA-256 update failed");
  const char* data = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string reason = n < 0 ? Reason() : "no progress";
      Abandon();
      return Status::IoError("cannot write " + tmp_ + " after " + std::to_string(bytes_) +
                             " bytes: " + reason + " (disk full?)");
    }
    data += n;
    left -= static_cast<size_t>(n);
    bytes_ += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Result<FileDigest> DurableFileWriter::Commit() {
  PW_CHECK(fd_ >= 0, "DurableFileWriter::Commit without a successful Open");
  if (::fsync(fd_) != 0) {
    const std::string reason = Reason();
    Abandon();
    return Status::IoError("cannot sync " + tmp_ + ": " + reason + " (disk full?)");
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const std::string reason = Reason();
    std::remove(tmp_.c_str());
    Abandon();
    return Status::IoError("cannot close " + tmp_ + ": " + reason);
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  PW_CHECK(EVP_DigestFinal_ex(sha_, digest, &length) == 1, "OpenSSL SHA-256 final failed");
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const std::string reason = Reason();
    std::remove(tmp_.c_str());
    Abandon();
    return Status::IoError("cannot rename " + tmp_ + " to " + path_ + ": " + reason);
  }
  Abandon();
  PW_RETURN_IF_ERROR(SyncDirectoryOf(path_));
  return FileDigest{bytes_, Hex(digest, length)};
}

Result<FileDigest> WriteFileDurably(const std::string& path, std::string_view contents) {
  DurableFileWriter writer(path);
  PW_RETURN_IF_ERROR(writer.Open());
  PW_RETURN_IF_ERROR(writer.Write(contents));
  return writer.Commit();
}

}  // namespace pw
