#include "comm/world_info.h"

#include <charconv>
#include <limits>
#include <utility>
#include <vector>

#include "os/environment.h"

namespace pw {
namespace {

// One launcher family: the variable names it uses.
struct Family {
  const char* name;         // "torchrun"
  const char* rank;         // required
  const char* size;         // required
  const char* local_rank;   // optional
  const char* local_size;   // optional: ranks on this machine
  const char* how_to_fix;   // appended to errors
};

constexpr Family kTorchrun{
    "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
    "torchrun sets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE and LOCAL_RANK; "
    "when setting them by hand, set at least the first four"};
constexpr Family kMpirun{
    "mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "Open MPI's mpirun sets OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK; pass the store "
    "address with `mpirun -x MASTER_ADDR=<host of rank 0> -x MASTER_PORT=<port>`"};
constexpr Family kSlurm{
    "slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE",
    "srun sets SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID; run the ranks with "
    "`srun --ntasks=N ...` (sbatch alone starts one task)"};

Result<int> ParseInt(const char* name, const std::string& text,
                     int min, int max, const Family& family) {
  int value = 0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return Status::InvalidArgument(std::string(name) + "='" + text +
                                   "' is not an integer (" + family.name + " environment)");
  }
  if (value < min || value > max) {
    return Status::InvalidArgument(std::string(name) + "=" + text + " is out of range [" +
                                   std::to_string(min) + ", " + std::to_string(max) +
                                   "] (" + family.name + " environment)");
  }
  return value;
}

bool IsSet(const EnvGetter& env, const char* name) {
  auto value = env(name);
  return value.has_value();
}

// Reads MASTER_ADDR / MASTER_PORT; `default_addr` / `default_port` (empty /
// 0: none) stand in when the variable is unset.
Status ReadMaster(const EnvGetter& env, const Family& family, const std::string& default_addr,
                  int default_port, WorldInfo* info) {
  auto addr = env("MASTER_ADDR");
  if (addr && addr->empty()) addr.reset();
  if (!addr && default_addr.empty()) {
    return Status::InvalidArgument(std::string("MASTER_ADDR is not set (") + family.name +
                                   " environment with " + family.rank +
                                   " set): it names the host of rank 0, where the "
                                   "TCPStore listens; " + family.how_to_fix);
  }
  info->master_addr = addr ? *addr : default_addr;
  auto port = env("MASTER_PORT");
  if (port && port->empty()) port.reset();
  if (!port && default_port == 0) {
    return Status::InvalidArgument(std::string("MASTER_PORT is not set (") + family.name +
                                   " environment with " + family.rank +
                                   " set): it is the TCPStore's port on MASTER_ADDR; " +
                                   family.how_to_fix);
  }
  if (port) {
    PW_ASSIGN_OR_RETURN(info->master_port,
                        ParseInt("MASTER_PORT", *port, 1, 65535, family));
  } else {
    info->master_port = default_port;
  }
  return Status::Ok();
}

Result<WorldInfo> ReadFamily(const EnvGetter& env, const Family& family) {
  WorldInfo info;
  info.source = family.name;
  auto rank = env(family.rank);
  auto size = env(family.size);
  if (!size && &family == &kSlurm) size = env("SLURM_NPROCS");  // older Slurm
  if (!rank || !size) {
    const char* missing = !rank ? family.rank : family.size;
    const char* present = !rank ? family.size : family.rank;
    return Status::InvalidArgument(std::string(present) + " is set but " + missing +
                                   " is not (partial " + family.name + " environment); " +
                                   family.how_to_fix);
  }
  PW_ASSIGN_OR_RETURN(info.world_size, ParseInt(family.size, *size, 1, 1 << 24, family));
  PW_ASSIGN_OR_RETURN(info.rank, ParseInt(family.rank, *rank, 0, 1 << 24, family));
  if (info.rank >= info.world_size) {
    return Status::InvalidArgument(std::string(family.rank) + "=" + *rank + " is not below " +
                                   family.size + "=" + *size + " (" + family.name +
                                   " environment): ranks are 0.." + family.size + "-1");
  }
  if (auto local = env(family.local_rank)) {
    PW_ASSIGN_OR_RETURN(info.local_rank, ParseInt(family.local_rank, *local, 0,
                                                  info.world_size - 1, family));
    if (info.local_rank > info.rank) {
      return Status::InvalidArgument(std::string(family.local_rank) + "=" + *local +
                                     " is above " + family.rank + "=" + *rank + " (" +
                                     family.name + " environment): a local rank counts "
                                     "ranks on one machine, so it cannot exceed the rank");
    }
  } else {
    // Unset: a hand-made environment on one machine; the rank is the local rank.
    info.local_rank = info.rank;
  }
  if (auto local_size = env(family.local_size)) {
    PW_ASSIGN_OR_RETURN(info.local_world_size,
                        ParseInt(family.local_size, *local_size, 1, info.world_size, family));
    if (info.local_rank >= info.local_world_size) {
      return Status::InvalidArgument(std::string(family.local_rank) + "=" + std::to_string(info.local_rank) +
                                     " is not below " + family.local_size + "=" + *local_size + " (" +
                                     family.name + " environment)");
    }
  }

  std::string default_addr;
  int default_port = 0;
  if (&family == &kSlurm) {
    auto nodelist = env("SLURM_JOB_NODELIST");
    if (!nodelist) nodelist = env("SLURM_NODELIST");
    if (nodelist && !nodelist->empty()) {
      auto host = FirstSlurmHost(*nodelist);
      if (!host.ok()) {
        return host.status().WithContext("SLURM_JOB_NODELIST='" + *nodelist + "'");
      }
      default_addr = *host;
    }
    if (auto job = env("SLURM_JOB_ID")) {
      PW_ASSIGN_OR_RETURN(int job_id, ParseInt("SLURM_JOB_ID", *job, 0,
                                               std::numeric_limits<int>::max(), family));
      default_port = 20000 + job_id % 20000;
    }
  }
  PW_RETURN_IF_ERROR(ReadMaster(env, family, default_addr, default_port, &info));
  if (auto ifname = env("GLOO_SOCKET_IFNAME")) info.gloo_interface = *ifname;
  if (&family == &kTorchrun) {
    auto agent_store = env("TORCHELASTIC_USE_AGENT_STORE");
    if (agent_store && (*agent_store == "True" || *agent_store == "true" || *agent_store == "1")) {
      info.store_hosted_by_launcher = true;
      int attempt = 0;
      if (auto restarts = env("TORCHELASTIC_RESTART_COUNT")) {
        PW_ASSIGN_OR_RETURN(attempt, ParseInt("TORCHELASTIC_RESTART_COUNT", *restarts, 0,
                                              std::numeric_limits<int>::max(), family));
      }
      info.store_prefix = "/worker/attempt_" + std::to_string(attempt);
    }
  }
  return info;
}

}  // namespace

EnvGetter ProcessEnvironment() {
  return [](const std::string& name) { return EnvironmentVariable(name); };
}

EnvGetter MapEnvironment(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string WorldInfo::ToString() const {
  return "rank " + std::to_string(rank) + "/" + std::to_string(world_size) + " (local " +
         std::to_string(local_rank) + ") via " + (source.empty() ? "?" : source) +
         ", store " + master_addr + ":" + std::to_string(master_port);
}

Result<WorldInfo> WorldFromEnvironment(const EnvGetter& env) {
  for (const Family* family : {&kTorchrun, &kMpirun, &kSlurm}) {
    bool any = IsSet(env, family->rank) || IsSet(env, family->size);
    if (family == &kSlurm) any = IsSet(env, family->rank);  // NTASKS alone: sbatch
    if (any) return ReadFamily(env, *family);
  }
  return Status::NotFound(
      "no distributed environment: none of RANK (torchrun), OMPI_COMM_WORLD_RANK "
      "(mpirun) or SLURM_PROCID (srun) is set; launch local ranks instead, or start "
      "the job with torchrun, mpirun or srun");
}

Result<std::string> FirstSlurmHost(std::string_view nodelist) {
  // The first entry ends at the first comma outside brackets.
  int depth = 0;
  size_t end = nodelist.size();
  for (size_t i = 0; i < nodelist.size(); ++i) {
    char c = nodelist[i];
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0) break;
    if (c == ',' && depth == 0) { end = i; break; }
  }
  if (depth != 0) {
    return Status::InvalidArgument("unbalanced brackets in Slurm node list '" +
                                   std::string(nodelist) + "'");
  }
  std::string_view entry = nodelist.substr(0, end);
  if (entry.empty()) {
    return Status::InvalidArgument("empty Slurm node list; set MASTER_ADDR instead");
  }
  // Replace each bracket range by its first element: "a[1-2]-b[3,4]" -> "a1-b3".
  std::string host;
  size_t i = 0;
  while (i < entry.size()) {
    if (entry[i] != '[') { host += entry[i++]; continue; }
    size_t close = entry.find(']', i);
    if (close == std::string_view::npos) {
      return Status::InvalidArgument("unbalanced brackets in Slurm node list '" +
                                     std::string(nodelist) + "'");
    }
    std::string_view range = entry.substr(i + 1, close - i - 1);
    size_t stop = range.find_first_of(",-");
    std::string_view first = range.substr(0, stop);
    if (first.empty()) {
      return Status::InvalidArgument("empty range in Slurm node list '" +
                                     std::string(nodelist) + "'");
    }
    host += first;
    i = close + 1;
  }
  return host;
}

bool IsLoopbackAddress(std::string_view host) {
  return host == "localhost" || host == "::1" || host.substr(0, 4) == "127.";
}

}  // namespace pw
