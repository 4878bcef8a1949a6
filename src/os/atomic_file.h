// AtomicFile: writes a file so that readers see either the old file or the
// whole new one, never a torn one. The bytes go to "<path>.tmp"; Commit
// closes it and renames it over <path>. With `durable`, Commit also fsyncs
// the file before the rename and the directory after it, so once Commit
// returns the new file survives a crash (checkpoints); without, it is as
// fast as a plain write (pictures, reports).
//
// A file abandoned before Commit (an error, the destructor) removes its
// .tmp; a process killed before Commit leaves <path> as it was (and a stray
// .tmp). Two writers of the same path race on the .tmp.
//
// Thread-safety: one thread per object. Failure: IoError naming the file
// and the system's reason; the .tmp is removed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "os/unique_fd.h"

namespace pw {

// How a whole file is written: kAtomic (readers see the old file or the
// new one) or kDurable (also fsynced, file and directory: the new one
// survives a crash — checkpoints, shards, manifests).
enum class Durability { kAtomic, kDurable };

// Writes `bytes` as the whole of `path` through an AtomicFile, replacing
// any existing file. IoError naming the path and the reason when its
// directory does not exist (said as such, not as the .tmp's ENOENT), the
// path is a directory, or writing or renaming fails; InvalidArgument for an
// empty path. The .tmp is removed on failure. Blocks on file I/O; two
// concurrent writers of one path race on "<path>.tmp".
Status WriteFile(const std::string& path, std::string_view bytes, Durability durability);

class AtomicFile {
 public:
  AtomicFile(std::string path, bool durable);
  ~AtomicFile();  // without Commit: removes the .tmp
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Creates (truncates) "<path>.tmp". Blocks on file I/O. Call once.
  Status Open();
  // Appends `bytes` to the .tmp. Blocks on file I/O; an error (disk full)
  // names the file and how much was written, and abandons it.
  Status Write(std::string_view bytes);
  // (durable: fsync,) close, rename over path, (durable: fsync of the
  // directory). Blocks on file I/O. Call once, after a successful Open.
  Status Commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return tmp_; }
  uint64_t bytes_written() const { return bytes_; }

 private:
  void Abandon();

  std::string path_;
  std::string tmp_;
  bool durable_;
  UniqueFd fd_;
  uint64_t bytes_ = 0;
};

}  // namespace pw
