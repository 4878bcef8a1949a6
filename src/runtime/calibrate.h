// Start-up calibration for `train --schedule auto` and `--layers-per-stage
// auto`: times one unit of each kind the partitioner splits the model into
// (model/partitioner.h: the embedding, one block, the head) on this
// machine, for the job's model shape and microbatch size, so that the
// choice of family and stage boundaries rests on measured F, I, W and B
// rather than on FLOP estimates (search/measured_split.h turns the result
// into stage costs).
//
// How: three StageModules of a one-block copy of the model (partition
// 0,1,0: the embedding alone, the block, the head alone) run on random
// token batches, one intra-op thread as in a rank (the launcher restores
// its own setting afterwards) and under the ranks' allocator settings
// (os/memory.h KeepFreedMemoryForReuse, which stays set in the launcher:
// under glibc's defaults the split's I + W paid page faults the ranks do
// not, measured 1.09x B instead of 1.01x, and `auto` passed over the
// zero-bubble families). Each repeat runs F, I, W on one microbatch
// and F, B on another; one warm-up repeat first (it allocates the .grad
// tensors and the allocator's caches), then at least 3 and at most 9
// repeats, stopping after about 0.6 s per unit. Each figure is the median.
// Why that is enough: after the warm-up a single-threaded GEMM-bound kernel
// on an idle core varies by a few per cent from run to run, and the choice
// treats makespans within 1 % as equal and breaks such ties by simpler
// structure, so a few samples decide as well as many; medians drop the odd
// descheduled run. Every block of the model has the same shape, so one
// block stands for all of them. For examples/small.toml at microbatch 8 it
// takes about 1 s.
//
// Thread-safety: uses LibTorch's process-wide thread setting; call it from
// the launcher's main thread before the ranks start (the cores are free
// then), never from a rank. Blocks while timing.
// Failure: InvalidArgument for an invalid model or microbatch size;
// errors from the stage modules (shapes) pass through.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "model/model_config.h"
#include "search/measured_split.h"

namespace pw {

Result<search::UnitTimings> CalibrateUnitTimings(const ModelConfig& model, int microbatch_size, uint64_t seed);

// What one message between two local ranks costs: Gloo's TCP transport
// over 127.0.0.1, timed with a socket pair in this process (two threads).
// latency_ms: half the median round trip of a 1-byte ping-pong (15
// rounds); bytes_per_ms: `message_bytes` (a stage boundary's activation)
// sent 5 times after a warm-up, each acknowledged with one byte, over the
// median time less one latency. Measured with the cores free: a rank that
// waits for a peer descheduled by its own compute sees more, which the
// simulator does not model yet. Takes a few ms for 1 MiB. Blocks.
// Failure: IoError from the sockets (naming the call); a 5 s receive
// timeout keeps a broken loopback from hanging the launcher.
struct LinkTimings {
  double latency_ms = 0;
  double bytes_per_ms = 0;
};
Result<LinkTimings> CalibrateLoopbackLink(double message_bytes);

}  // namespace pw
