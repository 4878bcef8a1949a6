// SharedRegion: bytes that one process writes once and every process on the
// same host maps read-only, without copies (Linux memfd). The inference
// weight pool's "shared" mode puts each rank's blocks in one (see
// infer/shared_pool.h).
//
// Why a memfd and not shm_open: it needs no /dev/shm (Docker's default is
// 64 MiB, and running out there kills a writer with SIGBUS instead of an
// error), leaves no name behind when a process dies, and can be sealed, so
// no one, the writer included, can change the bytes after publishing them.
// Another process opens it as /proc/<pid>/fd/<fd> while the creator keeps
// the descriptor open (same user, same host and PID namespace); once mapped,
// the bytes live until the last mapping goes, whoever exits first.
//
// Pages of a region count as the process's RssShmem (os/memory.h's
// file_bytes), not as its own anonymous memory.
//
// Thread-safety: a region is a value owned by one thread; mapped bytes may be
// read from any thread. Failure: Status naming the call, the region and the
// errno text; nothing is left behind on failure.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace pw {

class SharedRegion {
 public:
  SharedRegion() = default;
  ~SharedRegion();
  SharedRegion(SharedRegion&& other) noexcept;
  SharedRegion& operator=(SharedRegion&& other) noexcept;
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  // A new writable region of `bytes` (> 0), its pages reserved now (so a
  // host short of memory fails here with FailedPrecondition, not later
  // with a signal). `label` names it in /proc/<pid>/fd and in errors.
  static Result<SharedRegion> Create(const std::string& label, int64_t bytes);

  // Copies `size` bytes to `offset` of a region from Create that is not
  // sealed yet. InvalidArgument outside the region; FailedPrecondition once
  // sealed.
  Status Write(int64_t offset, const void* data, int64_t size);

  // Makes the bytes final (the kernel refuses any write, grow or shrink from
  // now on) and maps them read-only: data() is valid after this. The
  // descriptor stays open so that others can Open the region until
  // CloseDescriptor.
  Status Seal();

  // Where another process on this host finds a sealed region: "<pid>/<fd>".
  std::string address() const;

  // Maps a region sealed by another process (its address()) read-only.
  // NotFound when the address names no openable file here (another host or
  // PID namespace, where the same pid/fd may be anything, or its creator
  // closed it); InvalidArgument when the file's size is not `bytes` or it is
  // not sealed; IoError when this process is out of descriptors or memory.
  static Result<SharedRegion> Open(const std::string& address, int64_t bytes);

  // Closes the descriptor (others can no longer Open the region); the
  // mapping stays. Idempotent.
  void CloseDescriptor();

  const uint8_t* data() const { return static_cast<const uint8_t*>(map_); }
  int64_t size() const { return bytes_; }

 private:
  void Reset();

  int fd_ = -1;
  void* map_ = nullptr;
  int64_t bytes_ = 0;
  bool sealed_ = false;
  std::string label_;
};

}  // namespace pw
