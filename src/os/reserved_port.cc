#include "os/reserved_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "os/socket.h"

namespace pw {

Result<ReservedPort> ReservedPort::On(const std::string& ipv4_address) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  if (inet_pton(AF_INET, ipv4_address.c_str(), &addr.sin_addr) != 1) {
    return Status::InvalidArgument("address '" + ipv4_address +
                                   "' is not an IPv4 address (a local launch binds 127.0.0.1 by default)");
  }
  PW_ASSIGN_OR_RETURN(UniqueFd holder, OpenSocket(AF_INET, SOCK_STREAM));
  const int one = 1;
  if (::setsockopt(holder.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
    return Status::IoError(std::string("setsockopt(SO_REUSEADDR): ") + std::strerror(errno));
  }
  if (::bind(holder.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Status::IoError("cannot bind a port on " + ipv4_address + ": " + std::strerror(errno));
  }
  socklen_t length = sizeof addr;
  if (::getsockname(holder.get(), reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    return Status::IoError(std::string("getsockname: ") + std::strerror(errno));
  }
  return ReservedPort(std::move(holder), static_cast<int>(ntohs(addr.sin_port)));
}

}  // namespace pw
