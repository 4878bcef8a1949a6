// IdleListener: the executor's report of when its rank is idle — the edges
// that bubble harvesting (harvest/) starts, pauses and resumes side tasks on.
//
//   OnIdle  the rank is about to block: a receive whose data has not arrived
//           (kRecvWait); the global gradient norm at its first OPT of the
//           step, waiting for the other pipeline ranks to finish their
//           backward (kNormWait: on every rank but the last to arrive, this
//           is where the simulator's end-of-step idle time goes); or the
//           end of its step (kBetweenSteps: from the end
//           of the rank's program — waiting for its sends, the step's
//           all-reduces and the slowest rank — until RunStep returns, and
//           around the step-start barrier when timelines are recorded; the
//           trainer's own work between steps, validation and checkpoints,
//           is not idle)
//   OnBusy  the rank stops waiting and computes again
//
// Edges alternate (OnIdle, OnBusy, OnIdle, ...). `action_index` is the
// position in the rank's lowered program of the action that waits (the
// RECV, or the OPT; -1 for kBetweenSteps), so a listener can look up the
// simulator's prediction of how long this bubble lasts.
//
// Thread-safety: called on the executor's thread, inside the step; an
// implementation must return within microseconds (no blocking I/O beyond one
// write to a local channel) — its latency is added to training.
#pragma once

#include <cstdint>

namespace pw {

enum class IdleReason { kRecvWait, kNormWait, kBetweenSteps };

struct IdleEdge {
  IdleReason reason = IdleReason::kRecvWait;
  int64_t step = 0;
  int action_index = -1;
};

class IdleListener {
 public:
  virtual ~IdleListener() = default;
  virtual void OnIdle(const IdleEdge& edge) = 0;
  virtual void OnBusy() = 0;
};

}  // namespace pw
