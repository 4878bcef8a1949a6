// ProcessGroups: the communication groups of one rank in a pp x dp job.
//
// Create() performs the rendezvous: rank 0 hosts a c10d TCPStore on
// MASTER_ADDR:MASTER_PORT, every rank connects to it, and then builds Gloo
// process groups over it (each under its own key prefix). Under torchrun,
// whose agent already hosts the store (WorldInfo::store_hosted_by_launcher),
// every rank connects as a client and uses WorldInfo::store_prefix.
//
//   world()          all ranks
//   pipeline()       the pp ranks of this rank's pipeline (p2p between stages);
//                    group rank = pp_rank
//   data_parallel()  the dp ranks holding the same stages (gradient
//                    all-reduce); group rank = dp_rank
//   serving()        optional second all-ranks group, for a thread other than
//                    the training thread (inference, monitoring)
//
// Layout: consecutive world ranks form a pipeline, world rank = dp_rank * pp
// + pp_rank (comm/grid.h explains the choice).
//
// Transport: Gloo over TCP. With a loopback MASTER_ADDR (local launch) every
// group binds 127.0.0.1; otherwise the interface in GLOO_SOCKET_IFNAME, or
// this machine's address on the route toward MASTER_ADDR
// (os/local_address.h; c10d's default, the hostname's address, as a last
// resort). Note: LibTorch 1.13's TCPStore has
// no bind-address option, so rank 0's store listens on all interfaces.
//
// Usage:
//   PW_ASSIGN_OR_RETURN(WorldInfo world, WorldFromEnvironment(ProcessEnvironment()));
//   PW_ASSIGN_OR_RETURN(ProcessGroups groups,
//                       ProcessGroups::Create(world, {.pp = 2}));  // dp = world / 2
//   PendingOp recv = groups.pipeline().PostRecv(activations, groups.pp_rank() - 1);
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "comm/comm_group.h"
#include "comm/grid.h"
#include "comm/world_info.h"
#include "core/status.h"

namespace pw {

struct ProcessGroupsOptions {
  int pp = 1;  // pipeline ranks; dp = world_size / pp
  // Bound on every wait on a group (Send/PostRecv/AllReduce Wait, Barrier):
  // the longest a rank blocks for a peer. Must cover the longest compute a
  // peer does between matching operations (a whole forward+backward of a
  // stage, or the optimizer step before the next all-reduce). It is also
  // Gloo's own timeout inside collectives and for connecting a group's
  // members once they have all joined. `train` and `infer` set it from
  // --collective-timeout (same default).
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  // Bound on the rendezvous: connecting to the store and every member of
  // each group joining it.
  std::chrono::milliseconds rendezvous_timeout{std::chrono::seconds(60)};
  bool serving_group = false;
  int gloo_threads = 1;  // Gloo worker threads per group (collectives)
  // For a process that ends when a group fails (a job's rank): the first
  // failed wait on any group gives the process 5 s to exit; if it is still
  // alive then, it prints the failure and exits with code 1. Tearing down
  // Gloo after a dead link was seen to block (rarely: once in ~60 link-down
  // trials, 13 s and 45 s) before the rank could print its error. Off for
  // tests and tools that go on after a failure.
  bool exit_after_failure = false;
};

class ProcessGroups {
 public:
  // Rendezvous and group creation, as described above; ends with a barrier
  // over the world, so when it returns every rank has all its groups.
  // Blocks up to about rendezvous_timeout per step. Every rank of the world
  // must call it with the same pp. Errors:
  //   InvalidArgument  pp does not divide the world size, bad options
  //   IoError          the store cannot be reached or hosted (port in use),
  //                    or some rank did not join in time; the message names
  //                    the step and the store address
  // Side effect: the process ignores SIGPIPE from then on (a write to a
  // closed peer fails the operation instead of killing the process).
  static Result<ProcessGroups> Create(const WorldInfo& world,
                                      const ProcessGroupsOptions& options);

  ProcessGroups(ProcessGroups&&) noexcept;
  ProcessGroups& operator=(ProcessGroups&&) noexcept;
  // Destroys the groups, then the store. Rank 0's store going away is
  // harmless once Create() returned everywhere (groups do not use it).
  ~ProcessGroups();

  const WorldInfo& world_info() const;
  const GridLayout& grid() const;
  int rank() const;     // world rank
  int pp_rank() const;  // stage rank inside the pipeline
  int dp_rank() const;  // replica index

  // Accessors never block. Each group is for one thread at a time.
  CommGroup& world();
  CommGroup& pipeline();
  CommGroup& data_parallel();
  CommGroup* serving();  // null unless options.serving_group

  // Adds `delta` to the job-wide counter `key` (kept in the rendezvous
  // store; every counter starts at 0) and returns its new value: the cursor
  // of a work queue the ranks share (delta 1: claim the next item; delta 0:
  // read). One round trip to the store; any thread, one at a time. IoError
  // when the store is out of reach (its host ended).
  Result<int64_t> AddToCounter(const std::string& key, int64_t delta);

 private:
  struct Impl;
  explicit ProcessGroups(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pw
