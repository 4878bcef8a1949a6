// SharedPool: the weight pool's "shared" mode, for ranks on one host. Rank r
// owns blocks OwnedBlocks(r) as in WaS, but puts their packed weights
// (PackBlock) in a sealed shared region (os/shared_memory.h) at Create;
// every rank maps every other rank's region read-only, so each block exists
// once on the host and every rank runs both parts of every block locally,
// as replicate does, reading the owner's pages in place. Nothing moves while
// generating: no fetches, no weight cache, no serving thread, no reserve.
// Each rank's budget pays for its own blocks (SharedMemoryBytes: they are
// shared pages, not the process's own memory).
//
// Why not WaS over loopback: WaS copies every remote block through the
// kernel on every pass (two copies per byte on the same cores) and keeps a
// cache for it; on one host the owner's pages can simply be read.
//
// A region is [64-byte header: magic, the owner's random token, its rank and
// block count][blocks in OwnedBlocks order]; a rank that maps another's
// region checks the header against what that rank announced, so a region
// address that names some other file (another host, a reused descriptor) is
// refused, not read.
//
// Thread-safety: one engine thread (WeightPool's contract); the mapped
// bytes are immutable. Failure: Status naming the rank and the region;
// every rank of the world returns the same verdict.
#pragma once

#include <memory>

#include "core/status.h"
#include "infer/model_weights.h"
#include "infer/weight_pool.h"

namespace pw {

class CommGroup;
class ProcessGroups;

// Collective over groups->world(): `weights` holds exactly OwnedBlocks(rank).
// Copies them into this rank's region, exchanges the regions' addresses
// (GatherStrings), maps every other region and checks it, then agrees with
// every rank that all succeeded. NotFound (on every rank) when some rank
// cannot map another's region: the ranks are not on one host, or not in
// one PID namespace (the message names both ranks; use --mode was or cas).
// FailedPrecondition when the host cannot hold a region. Blocks.
Result<std::unique_ptr<WeightPool>> MakeSharedPool(const ModelWeights& weights, ProcessGroups* groups);

// Collective over `world`: whether every rank can map every other rank's
// memory (the same exchange with empty regions). false when one cannot;
// an error only when the group itself fails. Blocks.
Result<bool> RanksShareMemory(CommGroup& world);

}  // namespace pw
