#include "os/cpu.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace pw {

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

int ConfiguredCpuCount() {
  const long cpus = sysconf(_SC_NPROCESSORS_CONF);
  return cpus > 0 ? static_cast<int>(cpus) : 1;
}

int CpuForLocalRank(int local_rank, int local_ranks) {
  if (local_ranks <= 0 || local_rank < 0 || local_rank >= local_ranks) return -1;
  const std::vector<int> cpus = AllowedCpus();
  if (static_cast<int>(cpus.size()) < local_ranks) return -1;
  return cpus[local_rank];
}

namespace {

Status CheckCpu(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    return Status::InvalidArgument("cpu " + std::to_string(cpu) + " is outside [0, " +
                                   std::to_string(CPU_SETSIZE) + ")");
  }
  return Status::Ok();
}

}  // namespace

Status PinThreadToCpu(int cpu) {
  PW_RETURN_IF_ERROR(CheckCpu(cpu));
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    return Status::IoError("pinning this thread to cpu " + std::to_string(cpu) +
                           ": sched_setaffinity: " + std::strerror(errno));
  }
  return Status::Ok();
}

Status PinProcessToCpu(int cpu) {
  PW_RETURN_IF_ERROR(CheckCpu(cpu));
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* e = readdir(dir)) {
      const int tid = std::atoi(e->d_name);
      if (tid > 0) sched_setaffinity(tid, sizeof(set), &set);  // ESRCH: the thread exited
    }
    closedir(dir);
  }
  // The calling thread last: threads created from now on inherit its mask.
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    return Status::IoError("pinning this process to cpu " + std::to_string(cpu) +
                           ": sched_setaffinity: " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace pw
