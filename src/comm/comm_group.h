// CommGroup: one c10d process group (Gloo) with the operations pipeline
// training needs, as Status-returning calls with bounded waits.
//
//   Send / PostRecv   point-to-point, asynchronous: both return a PendingOp at
//                     once; post receives early, wait when the data is needed
//   AllReduce         sum or average of a list of tensors, packed into few
//                     flat buckets (one collective per bucket, not per tensor)
//   Barrier           every member reaches it
//
// Tensors: CPU tensors of any dtype (float32 in practice). A receive needs a
// preallocated tensor of the exact shape and dtype the sender sends: the
// shape is known to both sides from the model and the schedule and is not
// transmitted. A size mismatch is a bug in the caller; Gloo then fails the
// operation (or, for some sizes, the process). Tensors handed to an
// operation must stay untouched until its PendingOp is waited on.
//
// Matching: a send to peer d with tag t matches the receive posted by d from
// this rank with tag t; several messages with the same (peer, tag) match in
// posting order. Collectives must be called in the same order by every
// member. A group is used by one thread at a time; use another group (e.g.
// ProcessGroups::serving()) for another thread.
//
// Failure: every wait is bounded by the group's timeout. When a peer dies or
// does not answer in time, Wait() returns IoError naming the group, ranks,
// operation and cause; the group must not be used after that (c10d cannot
// resynchronise it) and the rank should exit, letting the launcher stop the
// job. Waiting blocks in the kernel (condition variable, epoll), not a spin:
// a rank waiting for a message leaves its core idle.
//
// The header avoids LibTorch includes (at::Tensor is only declared), so
// including it is cheap; callers that build tensors include ATen anyway.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace at {
class Tensor;
}  // namespace at
namespace c10d {
class ProcessGroup;
}  // namespace c10d

namespace pw {

enum class ReduceKind { kSum, kAvg };

inline constexpr size_t kDefaultBucketBytes = 25u << 20;  // like PyTorch DDP

// A posted operation. Move-only. Destroying it without Wait() leaves the
// operation running in the background (its tensors stay alive until it ends).
class PendingOp {
 public:
  PendingOp();  // an operation that already succeeded (nothing to wait for)
  static PendingOp Failed(Status status);
  PendingOp(PendingOp&&) noexcept;
  PendingOp& operator=(PendingOp&&) noexcept;
  ~PendingOp();

  // Blocks until the operation completes, fails, or the group's timeout
  // passes (counted from this call); then finishes it (for a reduce: copies
  // results back into the caller's tensors). Returns the same Status on
  // every later call. Not for concurrent use on one PendingOp.
  Status Wait();
  // Non-blocking: true when Wait() would not block. False only means it
  // may: c10d's Gloo sends and receives (LibTorch 1.13) report completion
  // only once waited for, so a finished Gloo op reads false until Wait().
  bool IsCompleted() const;

  struct State;  // defined in comm_group.cc

 private:
  explicit PendingOp(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
  friend class CommGroup;
};

class CommGroup {
 public:
  struct Impl;  // defined in comm_group.cc
  // Built by ProcessGroups (comm/process_groups.h).
  explicit CommGroup(std::unique_ptr<Impl> impl);
  CommGroup(CommGroup&&) noexcept;
  CommGroup& operator=(CommGroup&&) noexcept;
  ~CommGroup();

  const std::string& name() const;  // "pipeline 1", "data-parallel 0", "world"
  int rank() const;                 // this process's rank in the group
  int size() const;
  int WorldRankOf(int group_rank) const;
  std::chrono::milliseconds timeout() const;

  // Starts sending `tensor` to group rank `dst`. Returns at once (the data
  // may be copied out later); a non-contiguous tensor is sent from a
  // contiguous copy. Errors (in the PendingOp): InvalidArgument for a bad
  // peer, tag < 0, or a non-CPU/undefined tensor; IoError from the transport.
  PendingOp Send(const at::Tensor& tensor, int dst, int tag = 0);

  // Posts a receive from group rank `src` into `buffer` (shape and dtype
  // must equal the sender's). Returns at once; the data is valid after Wait()
  // returns OK. A non-contiguous buffer is filled on Wait().
  PendingOp PostRecv(const at::Tensor& buffer, int src, int tag = 0);

  // Starts an all-reduce of `tensors` (same dtype, CPU) over the group: they
  // are packed into flat buckets of about `bucket_bytes` (a single
  // contiguous tensor is reduced in place), one collective per bucket, and
  // unpacked (and for kAvg divided by size()) on Wait(). Returns at once.
  PendingOp AllReduce(const std::vector<at::Tensor>& tensors, ReduceKind kind,
                      size_t bucket_bytes = kDefaultBucketBytes);

  // Blocks until every member has called Barrier(), or the timeout passes.
  Status Barrier();

  // The underlying c10d group, for operations not wrapped here. Same
  // ordering and threading rules.
  c10d::ProcessGroup& backend();

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace pw
