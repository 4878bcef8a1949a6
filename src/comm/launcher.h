// LaunchLocalRanks: runs one process per rank on this machine and supervises
// them, like `torchrun --standalone`.
//
// Each rank is `argv` exec'd with MASTER_ADDR=127.0.0.1, MASTER_PORT (a port
// the launcher reserves for the whole job: os/reserved_port.h), RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and one thread per rank
// (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS), so that
// WorldFromEnvironment (comm/world_info.h) in the child finds them; rank 0
// hosts the TCPStore on that port.
//
// Output: every line a rank writes to stdout or stderr reaches the sink
// whole, prefixed "[rank N] " (lines are cut at '\n'; a partial line waits
// for its end or for the rank's exit, so lines never interleave).
//
// Supervision: when a rank exits non-zero or is killed by a signal, every
// other rank gets SIGTERM, then SIGKILL after `grace`; the launcher then
// returns a Status naming the rank, why (exit code, or signal name) and its
// last stderr lines. A global `timeout` does the same to a job that runs too
// long and names the ranks still running; so does `straggler_timeout` to
// ranks still running long after another rank finished.
//
// Culprits: when the job fails, the launcher first reads the state of every
// rank still running (/proc/PID/stat). A rank in state 'T' or 't' (SIGSTOP,
// a debugger) hung the job: the Status names it first, as the culprit, and
// it gets SIGKILL at once (SIGTERM would wait for a SIGCONT). When no rank
// is stopped but the first failing rank's last stderr lines say it timed out
// waiting for a peer, the ranks that were still running then (they had not
// timed out themselves) are named as the likely culprits. Each rank runs in its own process
// group, and signals go to the group, so programs a rank started die with
// it; whatever is left in a rank's group when all ranks have exited is
// killed too (no process outlives the job). If the launcher's thread dies, the kernel kills every rank
// (PR_SET_PDEATHSIG). Nothing hangs: waiting is bounded by timeout + grace.
//
// No LibTorch here; no signal handlers are installed (no global state).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "os/signals.h"  // SignalName

namespace pw {

enum class OutputStream { kStdout, kStderr };

// Receives each line of each rank, already prefixed ("[rank 3] loss 2.1"),
// without the trailing newline. Called from the launcher's thread only.
using LineSink =
    std::function<void(int rank, OutputStream stream, const std::string& prefixed_line)>;

struct LaunchOptions {
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: reserve a free port on master_addr for the job
  // Whole-job limit; zero means none. On expiry every rank is stopped.
  std::chrono::milliseconds timeout{0};
  // Once a rank has exited successfully, the others must exit within this
  // (zero: no limit); then they are stopped and the job fails naming them.
  // The ranks of an SPMD job end together (their last collective ends at
  // once), so a rank still running long after another finished hangs — a
  // rank stopped after the job's last collective is otherwise waited for
  // forever. `train` and `infer` set it to the collective timeout.
  std::chrono::milliseconds straggler_timeout{0};
  // A rank that stays stopped (state T or t: SIGSTOP, a debugger) this long
  // fails the job, naming it (zero: never). Its peers' waits are bounded by
  // their own timeouts, but not every wait is (a store request to a stopped
  // store host). The launcher samples the ranks' states every
  // stopped_timeout / 4 (0.1 to 1 s). `train` and `infer` set it to the
  // collective timeout.
  std::chrono::milliseconds stopped_timeout{0};
  // Time between SIGTERM and SIGKILL when stopping ranks.
  std::chrono::milliseconds grace{2000};
  int threads_per_rank = 1;         // OMP/OpenBLAS/MKL thread counts
  int stderr_tail_lines = 10;       // kept per rank for the failure message
  // Extra variables for every rank (override inherited ones).
  std::vector<std::pair<std::string, std::string>> env;
  // Null: lines go to this process's stdout / stderr, one write(2) per line.
  LineSink sink;
};

// How one rank ended.
struct RankExit {
  int rank = -1;
  pid_t pid = -1;
  bool exited = false;        // exited normally with exit_code
  int exit_code = 0;
  int signal = 0;             // killed by this signal (when !exited)
  bool stopped_by_launcher = false;  // the launcher signalled it
  // In state 'T'/'t' (SIGSTOP, a debugger) when the job failed: it hung the job.
  bool was_stopped = false;
  double seconds = 0;         // run time
  std::vector<std::string> stderr_tail;  // last lines, without prefix

  bool ok() const { return exited && exit_code == 0; }
  // "exited with code 3", "was killed by signal SIGABRT (Aborted)".
  std::string Describe() const;
};

struct LaunchReport {
  int master_port = 0;
  std::vector<RankExit> ranks;  // indexed by rank
  double seconds = 0;
};

// Runs `argv` (argv[0] is a path, or a name searched in PATH) as ranks
// 0..world_size-1 and waits for all of them. OK when every rank exits 0.
// Errors:
//   InvalidArgument  empty argv, world_size < 1, argv[0] not found
//   IoError          a rank failed (or the job timed out): the message names
//                    the rank, why, and its last stderr lines; the other
//                    ranks were stopped; also when fork/pipe fail
// Blocks until every rank has exited (at most timeout + grace + ~1 s when a
// timeout is set). `report`, when given, receives every rank's exit. Call
// from a thread that outlives the job (PR_SET_PDEATHSIG follows the thread);
// concurrent launches from different threads are independent.
Status LaunchLocalRanks(const std::vector<std::string>& argv, int world_size,
                        const LaunchOptions& options, LaunchReport* report = nullptr);

}  // namespace pw
