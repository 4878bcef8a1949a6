// Durable files: how checkpoints reach the disk, and the digest that lets a
// reader tell an intact file from a damaged one.
//
// A DurableFileWriter is an os/AtomicFile with `durable` set plus a digest:
// it writes "<path>.tmp", fsyncs it, renames it over
// <path> and fsyncs the directory, so once Commit returns the new file
// survives a crash, and at every moment a reader sees the old file or the
// new one, never a torn one. A writer abandoned before Commit (an error,
// the destructor) removes its .tmp; a process killed before Commit leaves
// <path> as it was (and a stray .tmp). The SHA-256 of the bytes (OpenSSL's
// libcrypto, Debian's libssl-dev) is computed as they are written, for the
// checkpoint manifest (model/checkpoint.h), which verifies it on reading.
//
// Thread-safety: a writer is used by one thread; the free functions have
// no shared state. Failure: IoError naming the file and the system's reason.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "os/atomic_file.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace pw {

struct FileDigest {
  uint64_t bytes = 0;
  std::string sha256;  // 64 lowercase hex digits
};

// SHA-256 of `bytes` as 64 lowercase hex digits. Pure.
std::string Sha256Hex(std::string_view bytes);

class DurableFileWriter {
 public:
  explicit DurableFileWriter(std::string path);
  ~DurableFileWriter();  // without Commit: removes the .tmp
  DurableFileWriter(const DurableFileWriter&) = delete;
  DurableFileWriter& operator=(const DurableFileWriter&) = delete;

  // Creates (truncates) "<path>.tmp". Blocks on file I/O.
  Status Open();
  // Appends `bytes` to the .tmp and to the digest. Blocks on file I/O; an
  // error (disk full) names the file.
  Status Write(std::string_view bytes);
  // fsync, close, rename over path, fsync of the directory; the digest of
  // everything written. Blocks on file I/O. Call once, after Open.
  Result<FileDigest> Commit();

  const std::string& path() const { return file_.path(); }

 private:
  void FreeDigest();

  AtomicFile file_;
  evp_md_ctx_st* sha_ = nullptr;  // from Open until Commit or a failed Write
};

// Open, Write(contents), Commit. Blocks on file I/O.
Result<FileDigest> WriteFileDurably(const std::string& path, std::string_view contents);

}  // namespace pw
