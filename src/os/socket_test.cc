// Sockets: a loopback listener accepts a connection made with a time limit
// and bytes flow both ways on blocking sockets; a refused connect fails
// fast with the reason; a SEQPACKET pair keeps message boundaries.
#include "os/socket.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <unistd.h>

namespace pw {
namespace {

TEST(SocketTest, ConnectsToALoopbackListener) {
  Result<TcpListener> listener = ListenOnLoopback();
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  EXPECT_GT(listener->port, 0);
  const sockaddr_in addr = LoopbackAddress(listener->port);
  Result<UniqueFd> client =
      ConnectWithTimeout(AF_INET, 0, reinterpret_cast<const sockaddr*>(&addr), sizeof addr, 1000);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_FALSE(fcntl(client->get(), F_GETFL) & O_NONBLOCK);
  EXPECT_TRUE(fcntl(client->get(), F_GETFD) & FD_CLOEXEC);
  Result<UniqueFd> server = Accept(listener->fd.get());
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  EXPECT_TRUE(fcntl(server->get(), F_GETFD) & FD_CLOEXEC);
  ASSERT_EQ(write(client->get(), "ping", 4), 4);
  char buffer[8] = {};
  EXPECT_EQ(read(server->get(), buffer, sizeof buffer), 4);
  EXPECT_STREQ(buffer, "ping");
}

TEST(SocketTest, RefusedConnectSaysSo) {
  int port = 0;
  {
    Result<TcpListener> listener = ListenOnLoopback();
    ASSERT_TRUE(listener.ok());
    port = listener->port;
  }  // closed: nothing listens there now
  const sockaddr_in addr = LoopbackAddress(port);
  Result<UniqueFd> client =
      ConnectWithTimeout(AF_INET, 0, reinterpret_cast<const sockaddr*>(&addr), sizeof addr, 1000);
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.status().message().find("refused"), std::string::npos) << client.status().message();
}

TEST(SocketTest, SeqPacketPairKeepsMessages) {
  Result<std::pair<UniqueFd, UniqueFd>> pair = SocketPair(SOCK_SEQPACKET);
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  ASSERT_EQ(write(pair->first.get(), "ab", 2), 2);
  ASSERT_EQ(write(pair->first.get(), "cde", 3), 3);
  char buffer[8];
  EXPECT_EQ(read(pair->second.get(), buffer, sizeof buffer), 2);
  EXPECT_EQ(read(pair->second.get(), buffer, sizeof buffer), 3);
  EXPECT_TRUE(fcntl(pair->second.get(), F_GETFD) & FD_CLOEXEC);
}

TEST(SocketTest, OpenSocketIsCloseOnExec) {
  Result<UniqueFd> fd = OpenSocket(AF_INET, SOCK_DGRAM);
  ASSERT_TRUE(fd.ok());
  EXPECT_TRUE(fcntl(fd->get(), F_GETFD) & FD_CLOEXEC);
}

}  // namespace
}  // namespace pw
