// ReservedPort: while held, no automatic port choice lands on the port and a
// plain bind is refused, yet a server that sets SO_REUSEADDR (as c10d's
// TCPStore does) binds and listens on it; released, the port is free.
#include "os/reserved_port.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "os/socket.h"
#include "os/unique_fd.h"

namespace pw {
namespace {

// A TCP socket bound to 127.0.0.1:port (0: the kernel's choice); invalid
// when bind fails.
UniqueFd BoundSocket(int port, bool reuse_address) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int one = 1;
  if (reuse_address) ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr = LoopbackAddress(port);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return UniqueFd();
  return fd;
}

int PortOf(const UniqueFd& fd) {
  sockaddr_in addr{};
  socklen_t length = sizeof addr;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &length);
  return ntohs(addr.sin_port);
}

TEST(ReservedPortTest, HeldPortIsSkippedByAutomaticChoicesAndRefusedToPlainBinds) {
  Result<ReservedPort> reserved = ReservedPort::On("127.0.0.1");
  ASSERT_TRUE(reserved.ok()) << reserved.status().ToString();
  const int port = reserved->port();
  ASSERT_GT(port, 0);
  ASSERT_LT(port, 65536);
  EXPECT_FALSE(BoundSocket(port, /*reuse_address=*/false).valid()) << "a plain bind took the held port";
  // Far more automatic choices than the kernel's ephemeral range has ports
  // in a row: the held port would come round if it were not skipped.
  for (int i = 0; i < 30000; ++i) {
    UniqueFd fd = BoundSocket(0, /*reuse_address=*/i % 2 == 0);
    ASSERT_TRUE(fd.valid());
    ASSERT_NE(PortOf(fd), port) << "bind to port 0 chose the held port (try " << i << ")";
  }
}

TEST(ReservedPortTest, AServerThatReusesTheAddressListensOnTheHeldPort) {
  Result<ReservedPort> reserved = ReservedPort::On("127.0.0.1");
  ASSERT_TRUE(reserved.ok()) << reserved.status().ToString();
  UniqueFd server = BoundSocket(reserved->port(), /*reuse_address=*/true);
  ASSERT_TRUE(server.valid()) << "the store's bind was refused";
  ASSERT_EQ(::listen(server.get(), 4), 0);
  // Clients reach it, and none is given the held port as its own source
  // port (the kernel's choice for connect skips it too).
  sockaddr_in addr = LoopbackAddress(reserved->port());
  for (int i = 0; i < 2000; ++i) {
    UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_NE(PortOf(client), reserved->port()) << "connect chose the held port as its source (try " << i << ")";
    UniqueFd accepted(::accept4(server.get(), nullptr, nullptr, SOCK_CLOEXEC));
    ASSERT_TRUE(accepted.valid());
  }
}

TEST(ReservedPortTest, ReleasedPortIsFreeAndBadAddressesAreNamed) {
  int port = 0;
  {
    Result<ReservedPort> reserved = ReservedPort::On("127.0.0.1");
    ASSERT_TRUE(reserved.ok()) << reserved.status().ToString();
    port = reserved->port();
  }
  EXPECT_TRUE(BoundSocket(port, /*reuse_address=*/false).valid()) << "the port stayed held";
  Result<ReservedPort> name = ReservedPort::On("localhost");
  ASSERT_FALSE(name.ok());
  EXPECT_EQ(name.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(name.status().message().find("'localhost' is not an IPv4 address"), std::string::npos)
      << name.status().ToString();
}

TEST(UniqueFdTest, ClosesOnceAndMovesOwnership) {
  int raw[2];
  ASSERT_EQ(::pipe(raw), 0);
  UniqueFd read_end(raw[0]);
  {
    UniqueFd write_end(raw[1]);
    UniqueFd moved = std::move(write_end);
    EXPECT_FALSE(write_end.valid());
    EXPECT_EQ(moved.get(), raw[1]);
  }  // closed here, once
  char byte;
  EXPECT_EQ(::read(read_end.get(), &byte, 1), 0) << "the write end is still open";
  const int released = read_end.Release();
  EXPECT_FALSE(read_end.valid());
  EXPECT_EQ(::close(released), 0) << "Release closed the descriptor";
}

}  // namespace
}  // namespace pw
