// Rendezvous facts for one rank: who am I, how many are we, and where is the
// c10d TCPStore. WorldFromEnvironment reads them from the variables that a
// job launcher sets, so the same binary joins a job started by
//
//   torchrun   MASTER_ADDR MASTER_PORT RANK WORLD_SIZE [LOCAL_RANK]
//              [LOCAL_WORLD_SIZE]
//              [TORCHELASTIC_USE_AGENT_STORE TORCHELASTIC_RESTART_COUNT]
//              (also what LaunchLocalRanks, comm/launcher.h, sets)
//   mpirun     OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE
//              [OMPI_COMM_WORLD_LOCAL_RANK OMPI_COMM_WORLD_LOCAL_SIZE]
//              + MASTER_ADDR MASTER_PORT (-x)
//   Slurm      SLURM_PROCID SLURM_NTASKS [SLURM_LOCALID SLURM_NTASKS_PER_NODE];
//              the store host is
//              MASTER_ADDR or the first host of SLURM_JOB_NODELIST, the port
//              MASTER_PORT or 20000 + SLURM_JOB_ID % 20000
//
// checked in that order: the first family with any of its rank variables
// set wins (torchrun inside an srun allocation is torchrun). A family that is
// only partly set, or values that disagree (RANK >= WORLD_SIZE), are errors
// that name the variable and say how to fix it.
//
// The environment is passed in as a getter, so parsing is pure and testable;
// ProcessEnvironment() wraps the real one.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace pw {

// Returns the value of an environment variable, or nullopt when unset.
using EnvGetter = std::function<std::optional<std::string>(const std::string& name)>;

// The getter for this process's environment (::getenv). Safe to call
// concurrently as long as nobody calls setenv meanwhile.
EnvGetter ProcessEnvironment();

// A getter over a fixed map (tests, or a launcher building a child's env).
EnvGetter MapEnvironment(std::map<std::string, std::string> vars);

struct WorldInfo {
  int rank = 0;            // 0 .. world_size-1
  int world_size = 1;
  int local_rank = 0;      // index among the ranks of this machine
  int local_world_size = 0;  // ranks on this machine; 0: the launcher did not say
  std::string master_addr = "127.0.0.1";  // where rank 0 hosts the TCPStore
  int master_port = 0;
  std::string source;      // "torchrun", "mpirun", "slurm": which family was read
  // GLOO_SOCKET_IFNAME when set: the network interface Gloo binds to
  // (ProcessGroups otherwise binds to loopback for a loopback master and to
  // this machine's address on the route toward master_addr otherwise).
  std::string gloo_interface;
  // torchrun's agent already hosts the TCPStore on MASTER_PORT
  // (TORCHELASTIC_USE_AGENT_STORE=True): rank 0 then connects like the
  // others, and keys live under store_prefix
  // ("/worker/attempt_<TORCHELASTIC_RESTART_COUNT>", as PyTorch does), so a
  // restarted attempt does not see the keys of the one before.
  bool store_hosted_by_launcher = false;
  std::string store_prefix;

  // "rank 2/4 (local 0) via torchrun, store 10.0.0.1:29500".
  std::string ToString() const;
};

// Reads the world from `env` (see the header comment for the variables).
// Errors:
//   NotFound         no family's rank variable is set (not a distributed job;
//                    the caller may launch local ranks instead)
//   InvalidArgument  a family is partly set, a value is not an integer or out
//                    of range, or the store address is missing
// Pure; never blocks; may be called concurrently.
Result<WorldInfo> WorldFromEnvironment(const EnvGetter& env);

// The first host of a Slurm node list: "node[03-05,9],gpu1" -> "node03",
// "a[1-2]-ib[3-4]" -> "a1-ib3", "host" -> "host". InvalidArgument for an
// empty list or unbalanced brackets.
Result<std::string> FirstSlurmHost(std::string_view nodelist);

// True for "localhost", "127.x.y.z" and "::1".
bool IsLoopbackAddress(std::string_view host);

}  // namespace pw
