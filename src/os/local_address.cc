#include "os/local_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "os/socket.h"

namespace pw {

Result<std::string> LocalAddressToward(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* addresses = nullptr;
  // Any port: connect() on a UDP socket only selects the route.
  if (int rc = getaddrinfo(host.c_str(), "9", &hints, &addresses); rc != 0) {
    return Status::NotFound("cannot resolve '" + host + "': " + gai_strerror(rc));
  }
  std::string last_error = "no address";
  for (addrinfo* a = addresses; a != nullptr; a = a->ai_next) {
    Result<UniqueFd> fd = OpenSocket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (!fd.ok()) {
      last_error = fd.status().message();
      continue;
    }
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    const bool found = connect(fd->get(), a->ai_addr, a->ai_addrlen) == 0 &&
                       getsockname(fd->get(), reinterpret_cast<sockaddr*>(&local), &len) == 0;
    if (!found) {
      last_error = std::strerror(errno);
      continue;
    }
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw = local.ss_family == AF_INET6
                          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
                          : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
    if (inet_ntop(local.ss_family, raw, text, sizeof(text)) == nullptr) {
      last_error = std::strerror(errno);
      continue;
    }
    freeaddrinfo(addresses);
    return std::string(text);
  }
  freeaddrinfo(addresses);
  return Status::IoError("no route from this machine to '" + host + "': " + last_error);
}

}  // namespace pw
