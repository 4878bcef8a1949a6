#include "os/fd_io.h"

#include <unistd.h>

#include <cerrno>

namespace pw {

bool WriteAll(int fd, std::string_view bytes) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

void WriteStderrAtomically(std::string_view text) {
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, text.data(), text.size());
}

ReadChunk ReadSome(int fd, char* buffer, size_t size) {
  while (true) {
    const ssize_t n = ::read(fd, buffer, size);
    if (n > 0) return ReadChunk{ReadChunk::kData, static_cast<size_t>(n)};
    if (n == 0) return ReadChunk{ReadChunk::kEnd, 0};
    if (errno == EINTR) continue;
    return ReadChunk{errno == EAGAIN || errno == EWOULDBLOCK ? ReadChunk::kWouldBlock : ReadChunk::kError, 0};
  }
}

bool IsTerminalStream(std::FILE* stream) { return stream != nullptr && ::isatty(::fileno(stream)) != 0; }

}  // namespace pw
