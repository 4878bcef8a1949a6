#include "os/line_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pw {
namespace {

std::string ErrnoText() { return std::strerror(errno); }

// Holds an exclusive flock for its scope.
class FileLock {
 public:
  explicit FileLock(int fd) : fd_(fd) {
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~FileLock() { ::flock(fd_, LOCK_UN); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

}  // namespace

Result<LineLog> LineLog::Open(const std::string& path, const std::string& label) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) {
    return Status::IoError("cannot open " + label + " " + path + " for appending: " + ErrnoText() +
                           "; check that its directory exists and is writable");
  }
  LineLog log(std::move(fd), path, label);
  FileLock lock(log.fd_.get());
  struct stat st {};
  if (::fstat(log.fd_.get(), &st) != 0) return Status::IoError("cannot stat " + path + ": " + ErrnoText());
  const int64_t size = st.st_size;
  PW_ASSIGN_OR_RETURN(const int64_t keep, log.EndOfLastLine(size));
  if (keep < size) {
    if (::ftruncate(log.fd_.get(), keep) != 0) {
      return Status::IoError("cannot cut the torn last line of " + path + ": " + ErrnoText());
    }
    log.truncated_bytes_ = size - keep;
  }
  return log;
}

Result<int64_t> LineLog::EndOfLastLine(int64_t size) const {
  char buf[4096];
  for (int64_t end = size; end > 0;) {
    const int64_t begin = end > static_cast<int64_t>(sizeof buf) ? end - static_cast<int64_t>(sizeof buf) : 0;
    const ssize_t n = ::pread(fd_.get(), buf, static_cast<size_t>(end - begin), begin);
    if (n != end - begin) return Status::IoError("cannot read " + path_ + ": " + ErrnoText());
    int64_t i = n - 1;
    while (i >= 0 && buf[i] != '\n') --i;
    if (i >= 0) return begin + i + 1;
    end = begin;
  }
  return int64_t{0};
}

Status LineLog::Append(std::string_view line) {
  FileLock lock(fd_.get());
  size_t done = 0;
  while (done < line.size()) {  // one write(2) unless the kernel writes short
    const ssize_t n = ::write(fd_.get(), line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IoError("cannot append to " + label_ + " " + path_ + ": " + ErrnoText());
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace pw
