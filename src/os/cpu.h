// CPU placement of this process: the cores it may use, and pinning every
// one of its threads (LibTorch's and Gloo's included) to one core.
#pragma once

#include <vector>

#include "core/status.h"

namespace pw {

// The CPUs this process may run on (its affinity mask), ascending; empty
// when the mask cannot be read. Thread-safe.
std::vector<int> AllowedCpus();

// The number of CPUs the machine has (configured, online or not); >= 1.
int ConfiguredCpuCount();

// The cpu for local rank `local_rank` of `local_ranks` ranks on this
// machine: the local_rank-th CPU of AllowedCpus(), when every local rank
// can have one of its own; -1 when not (fewer CPUs than ranks, local_ranks
// unknown (<= 0), or local_rank outside [0, local_ranks)). Thread-safe.
int CpuForLocalRank(int local_rank, int local_ranks);

// Pins the calling thread to `cpu`; threads it starts later inherit the
// pin, the process's other threads keep theirs. Errors as PinProcessToCpu.
Status PinThreadToCpu(int cpu);

// Pins every thread of this process (/proc/self/task) and threads it
// starts later to `cpu`. Threads that exit meanwhile are skipped. Errors:
// InvalidArgument for a cpu outside [0, CPU_SETSIZE); IoError when the
// calling thread cannot be pinned (e.g. the cpu is not in the cgroup).
// Any thread may call it; it races only with threads being created.
Status PinProcessToCpu(int cpu);

}  // namespace pw
