#include "os/fault_seam.h"

#include <atomic>
#include <cerrno>

namespace pw {
namespace {

std::atomic<int> g_write_errno{0};

}  // namespace

void FakeDiskFull() { g_write_errno.store(ENOSPC); }

void ClearFakeFaults() { g_write_errno.store(0); }

int FakedWriteErrno() { return g_write_errno.load(std::memory_order_relaxed); }

}  // namespace pw
