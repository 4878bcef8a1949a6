#include "os/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "os/poll.h"

namespace pw {
namespace {

Status SocketError(const std::string& call) { return Status::IoError(call + " failed: " + std::strerror(errno)); }

}  // namespace

sockaddr_in LoopbackAddress(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

Result<UniqueFd> OpenSocket(int family, int type, int protocol) {
  UniqueFd fd(::socket(family, type | SOCK_CLOEXEC, protocol));
  if (!fd.valid()) return SocketError("socket");
  return fd;
}

Result<TcpListener> ListenOnLoopback(int backlog) {
  PW_ASSIGN_OR_RETURN(UniqueFd fd, OpenSocket(AF_INET, SOCK_STREAM));
  sockaddr_in addr = LoopbackAddress(0);
  socklen_t length = sizeof addr;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd.get(), backlog) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    return SocketError("listening on 127.0.0.1");
  }
  return TcpListener{std::move(fd), static_cast<int>(ntohs(addr.sin_port))};
}

Result<UniqueFd> Accept(int listener) {
  UniqueFd fd(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd.valid()) return SocketError("accept");
  return fd;
}

Result<UniqueFd> ConnectWithTimeout(int family, int protocol, const sockaddr* address,
                                    socklen_t address_length, int timeout_ms) {
  PW_ASSIGN_OR_RETURN(UniqueFd fd, OpenSocket(family, SOCK_STREAM | SOCK_NONBLOCK, protocol));
  if (::connect(fd.get(), address, address_length) != 0) {
    if (errno != EINPROGRESS) return SocketError("connect");
    if (!WaitWritable(fd.get(), timeout_ms)) {
      return Status::IoError("connect: no answer within " + std::to_string(timeout_ms) + " ms");
    }
    int error = 0;
    socklen_t length = sizeof error;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) return SocketError("getsockopt(SO_ERROR)");
    if (error != 0) return Status::IoError(std::string("connect failed: ") + std::strerror(error));
  }
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  return fd;
}

Result<std::pair<UniqueFd, UniqueFd>> SocketPair(int type) {
  int fds[2];
  if (::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds) != 0) return SocketError("socketpair");
  return std::make_pair(UniqueFd(fds[0]), UniqueFd(fds[1]));
}

Status SendAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return SocketError("send");
    p += k;
    n -= static_cast<size_t>(k);
  }
  return Status::Ok();
}

Status ReceiveAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k == 0) return Status::IoError("recv failed: the peer closed the connection");
    if (k < 0) return SocketError("recv");
    p += k;
    n -= static_cast<size_t>(k);
  }
  return Status::Ok();
}

Status SetNoDelayAndReceiveTimeout(int fd, int timeout_seconds) {
  const int one = 1;
  timeval timeout{timeout_seconds, 0};
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) != 0) {
    return SocketError("setsockopt");
  }
  return Status::Ok();
}

void ShutdownSocket(int fd) { ::shutdown(fd, SHUT_RDWR); }

MessageSent SendMessage(int fd, const void* message, size_t size, bool block) {
  const int flags = MSG_NOSIGNAL | (block ? 0 : MSG_DONTWAIT);
  while (true) {
    if (::send(fd, message, size, flags) == static_cast<ssize_t>(size)) return MessageSent::kSent;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS ? MessageSent::kWouldBlock
                                                                       : MessageSent::kFailed;
  }
}

MessageReceived ReceiveMessage(int fd, void* message, size_t size) {
  while (true) {
    const ssize_t n = ::recv(fd, message, size, MSG_DONTWAIT);
    if (n == static_cast<ssize_t>(size)) return MessageReceived::kReceived;
    if (n > 0) return MessageReceived::kOtherSize;
    if (n == 0) return MessageReceived::kClosed;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK ? MessageReceived::kNone : MessageReceived::kClosed;
  }
}

void WaitUntilListening(const std::string& host, int port, std::chrono::steady_clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addresses = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &addresses) != 0) return;
  while (std::chrono::steady_clock::now() < deadline) {
    for (addrinfo* a = addresses; a != nullptr; a = a->ai_next) {
      // A connection accepted (and closed again at once): the server listens.
      if (ConnectWithTimeout(a->ai_family, a->ai_protocol, a->ai_addr, a->ai_addrlen, 1000).ok()) {
        ::freeaddrinfo(addresses);
        return;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::freeaddrinfo(addresses);
}

}  // namespace pw
