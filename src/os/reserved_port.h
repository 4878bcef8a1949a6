// ReservedPort: a TCP port on a local IPv4 address that no other program's
// automatic choice of port can take while this object lives, and that a
// server started later, in another process, can still bind and listen on.
//
// Why: the local launcher picks the store's port, then rank 0 hosts the
// TCPStore on it a second or two later (after loading LibTorch). A port
// merely found free and given back could be taken in between — by another
// job's launcher picking a port, or by any socket's automatic port (Gloo's
// listeners, the source port of a connect) — and the ranks would then fail
// to bind or, worse, join another job's store.
//
// How: a socket bound to the port with SO_REUSEADDR that never listens.
// Linux skips ports that have such a binding when it chooses a port
// automatically (bind to port 0, connect), and refuses an explicit bind
// without SO_REUSEADDR; an explicit bind with SO_REUSEADDR and then listen
// succeed, because the holder never listens. c10d's TCPStore server sets
// SO_REUSEADDR.
//
// Thread-safety: a plain value; the port is released when it is destroyed.
#pragma once

#include <string>

#include "core/status.h"
#include "os/unique_fd.h"

namespace pw {

class ReservedPort {
 public:
  // Reserves a free port on `ipv4_address` (e.g. "127.0.0.1"). Errors:
  // InvalidArgument when the address is not IPv4 text ("localhost" is not);
  // IoError when no socket or port is available.
  static Result<ReservedPort> On(const std::string& ipv4_address);

  int port() const { return port_; }

 private:
  ReservedPort(UniqueFd holder, int port) : holder_(std::move(holder)), port_(port) {}

  UniqueFd holder_;
  int port_ = 0;
};

}  // namespace pw
