// Sockets as UniqueFds, all close-on-exec: a loopback TCP listener, accept,
// connect with a time limit, and a socket pair between a parent and the
// child it spawns. Addresses come from the caller (getaddrinfo) or are
// loopback; the sockets are plain descriptors for send/recv.
//
// Thread-safety: plain functions; each socket has one owner.
// Failure: IoError naming the call and the system's reason.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <utility>

#include "core/status.h"
#include "os/unique_fd.h"

namespace pw {

// socket(family, type | SOCK_CLOEXEC, protocol). `type` may include
// SOCK_NONBLOCK. Never blocks.
Result<UniqueFd> OpenSocket(int family, int type, int protocol = 0);

// 127.0.0.1:port as an address for connect / bind. Pure.
sockaddr_in LoopbackAddress(int port);

struct TcpListener {
  UniqueFd fd;
  int port = 0;  // the port the kernel chose
};

// A TCP socket listening on 127.0.0.1 on a port the kernel picks, with
// `backlog` pending connections. Never blocks.
Result<TcpListener> ListenOnLoopback(int backlog = 1);

// Accepts one connection on `listener` (accept4, close-on-exec). Blocks
// until a peer connects unless the listener is non-blocking.
Result<UniqueFd> Accept(int listener);

// A stream socket connected to `address` within `timeout_ms`: a
// non-blocking connect, then a wait for it to finish. The socket returned
// is blocking again. IoError when the peer refuses, does not answer in
// time, or no socket is available. Blocks at most `timeout_ms`.
Result<UniqueFd> ConnectWithTimeout(int family, int protocol, const sockaddr* address,
                                    socklen_t address_length, int timeout_ms);

// The two connected ends of an AF_UNIX socket pair of `type`
// (SOCK_SEQPACKET: whole messages, in order). Never blocks.
Result<std::pair<UniqueFd, UniqueFd>> SocketPair(int type);

// All `n` bytes over a stream socket (MSG_NOSIGNAL: a closed peer is an
// error, not SIGPIPE), or all `n` received. IoError naming the call when it
// fails, times out (SO_RCVTIMEO) or the peer closes. Block.
Status SendAll(int fd, const void* data, size_t n);
Status ReceiveAll(int fd, void* data, size_t n);

// TCP_NODELAY (small messages leave at once) and a receive time limit.
Status SetNoDelayAndReceiveTimeout(int fd, int timeout_seconds);

// Ends both directions of a connected socket, which wakes a peer blocked in
// a receive. Never blocks; errors ignored.
void ShutdownSocket(int fd);

// Whole messages of a fixed size on a SOCK_SEQPACKET socket (the rank ↔
// side-task host control channel). Interrupted calls are retried.
enum class MessageSent { kSent, kWouldBlock, kFailed };
// `block` false: never blocks (kWouldBlock when the socket is full).
MessageSent SendMessage(int fd, const void* message, size_t size, bool block);
enum class MessageReceived { kReceived, kOtherSize, kNone, kClosed };
// Never blocks: kNone when nothing is queued, kOtherSize for a message not
// `size` bytes long (dropped), kClosed at the peer's end or an error.
MessageReceived ReceiveMessage(int fd, void* message, size_t size);

// Returns once a TCP server accepts connections on host:port (connecting
// and closing again every 20 ms), or at `deadline`, or at once when the
// host does not resolve (the caller's own connect reports that).
void WaitUntilListening(const std::string& host, int port, std::chrono::steady_clock::time_point deadline);

}  // namespace pw
