// Reading and writing plain descriptors and standard streams: the pipes of
// a job's ranks and side tasks, and this process's stderr.
//
// Thread-safety: plain functions; a descriptor's reads belong to one thread.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string_view>

namespace pw {

// Writes all of `bytes` to `fd`, retrying interrupted and short writes.
// False when the descriptor fails (a closed pipe, a full disk).
bool WriteAll(int fd, std::string_view bytes);

// One write(2) of `text` to stderr, so that a line stays whole among other
// threads' and processes' lines. Errors are ignored (stderr is the last
// resort for a message).
void WriteStderrAtomically(std::string_view text);

// One read(2) into `buffer`, retrying an interrupted call.
struct ReadChunk {
  enum State { kData, kEnd, kWouldBlock, kError };
  State state = kEnd;
  size_t bytes = 0;  // when kData
};
ReadChunk ReadSome(int fd, char* buffer, size_t size);

// Whether `stream` is a terminal (progress lines redraw in place there).
bool IsTerminalStream(std::FILE* stream);

}  // namespace pw
