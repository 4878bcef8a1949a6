// Which of this machine's addresses other hosts can reach it at: the source
// address the kernel picks for traffic toward rank 0's host. Gloo binds each
// rank's listening socket to one address and publishes it through the
// store, so it must be one the peers can connect to. c10d's default device
// takes the address of this machine's hostname instead, and falls back to
// 127.0.0.1 when that address is loopback — as on Debian (127.0.1.1 in
// /etc/hosts), in containers, and in network namespaces — which the peers on
// other hosts then cannot reach (`connect [127.0.0.1]:port: Connection
// refused`). The route toward MASTER_ADDR names the interface the job's
// traffic uses, the way one picks GLOO_SOCKET_IFNAME by hand.
#pragma once

#include <string>

#include "core/status.h"

namespace pw {

// The numeric local address (IPv4 or IPv6) of the route toward `host`
// (a name or a numeric address): "10.77.0.2" on the host whose interface
// toward 10.77.0.1 has that address, the address itself for one of this
// machine's own addresses. Nothing is sent: a UDP socket is connected, which
// only looks up the route. Errors: NotFound when `host` does not resolve,
// IoError when no route leads there. May block for name resolution
// (DNS); safe to call concurrently.
Result<std::string> LocalAddressToward(const std::string& host);

}  // namespace pw
