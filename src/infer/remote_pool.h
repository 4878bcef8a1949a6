// RemotePool: the client side of the pooled modes (was, cas, auto) on a
// world of two or more ranks, plus this rank's ServingThread (the owner
// side). Created by CreateWeightPool (infer/weight_pool.h); wire protocol in
// infer/pool_protocol.h.
//
// Weight-as-a-service: the non-owned blocks, in layer order, are numbered
// k = 0..M-1 and block k lives in cache slot k % S (S = min(cache_slots,
// M)). Acquiring block k posts the fetches of blocks up to k + depth
// (receives straight into their slots, posted before the request so the
// owner's sends land as they go) and waits for block k only. When M >=
// cache_slots, depth < S, so the slot a prefetch overwrites belongs to a
// block already used; when M < cache_slots every block has its own slot. A slot
// that still holds the block asked for is used again without a fetch (when
// M <= S every pass after the first is all hits).
// Compute-as-a-service: the part's inputs go to the owner and its result
// comes back (the receive is posted first).
// Auto: BeginPass(rows) takes the mode with the smaller predicted pass time:
// ChooseMode's prediction from the start-up calibration plus, per mode, what
// the passes run in that mode taught it: each pass's measured wall time, less
// its time in attention (the same in both modes, and a function of the rows
// and their histories that ChooseMode does not model, so a correction learned
// over a prefill's attention would not fit a decode pass), minus ChooseMode's
// prediction for it; the mean of a mode's first passes, then an EWMA of
// weight 0.2. The job's first pass teaches nothing: it runs cold (WaS fetches
// every remote block) at about twice the time of the passes after it. After 4
// passes in a row of one mode, a mode that has taught fewer than 2 passes is
// run once, so both are measured, and measured twice before auto gives its
// cache up for CaS. Why learn: the calibration measures an idle link and an
// idle core, but under load a CaS round trip also waits for the owner's
// serving thread to be scheduled (2 ms instead of 46 µs with 4 ranks on 2
// cores), and WaS's transfers take CPU from compute on both ends; no start-up
// figure sees either, and the second shows in no wait, only in the pass's
// time. Once CaS has run 8 passes in a row and ShouldDropWeightCache agrees,
// auto frees its weight cache for KV blocks
// (WeightPool::TakeReleasedKvBlocks), runs CaS from then on and tells every
// other rank (kCasCommitted), whose auto follows at its next pass end: one
// choice for the job, because a CaS pass waits on owners that are busy with
// WaS passes of their own. Once WaS has run 8 passes in a row and is still
// predicted faster, or after a WaS pass once both modes are measured and CaS
// is predicted at least twice as slow (WasWinsDecisively), auto commits to
// WaS and tells the others (kWasCommitted), who follow; a rank that has heard
// from every other one knows no CaS request can come and hands its serving
// reserve to the KV cache (TakeReleasedKvBlocks again). What auto learns
// and decides is AutoModePolicy's (infer/auto_mode_policy.h, pure); the
// pool keeps the transport, the slots and the announcements.
//
// Thread-safety: one engine thread calls the pool (WeightPool's contract).
// Failure: IoError naming this rank, the owner and the block; after one the
// pool must not be used again (the groups are broken) and the job should
// exit.
#pragma once

#include <memory>

#include "core/status.h"
#include "infer/weight_pool.h"

namespace pw {

// `weights` holds exactly OwnedBlocks(rank); `calibration` is used by auto.
// Starts the serving thread. Does not block; no collectives.
Result<std::unique_ptr<WeightPool>> MakeRemotePool(const PoolOptions& options,
                                                   const ModelWeights& weights,
                                                   ProcessGroups* groups,
                                                   const PoolCalibration& calibration);

}  // namespace pw
