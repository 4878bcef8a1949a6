// LineLog: a file of whole lines that several processes append to (a job's
// results file, written by every rank): each line goes in one write(2)
// under an exclusive flock, and a line torn by a crash (bytes after the
// last newline) is cut when the file is opened again.
//
// Thread-safety: one owner per LineLog; processes coordinate by the lock.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "os/unique_fd.h"

namespace pw {

class LineLog {
 public:
  // Opens (creating) `path` for appending and, under the lock, cuts a torn
  // last line. IoError naming `label` (e.g. "results file"), the path and
  // the system's reason.
  static Result<LineLog> Open(const std::string& path, const std::string& label);

  // Appends `line` (which ends in '\n') in one write unless the kernel
  // writes short, under the lock. Blocks while another process holds it.
  Status Append(std::string_view line);

  // How many bytes of a torn line Open cut (0: none).
  int64_t truncated_bytes() const { return truncated_bytes_; }

 private:
  LineLog(UniqueFd fd, std::string path, std::string label)
      : fd_(std::move(fd)), path_(std::move(path)), label_(std::move(label)) {}
  // The offset just past the last newline (0 when there is none).
  Result<int64_t> EndOfLastLine(int64_t size) const;

  UniqueFd fd_;
  std::string path_, label_;
  int64_t truncated_bytes_ = 0;
};

}  // namespace pw
