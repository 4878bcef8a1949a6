#include "os/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <string>

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

}  // namespace pw
