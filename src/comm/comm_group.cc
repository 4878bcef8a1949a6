#include "comm/comm_group.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <unistd.h>

#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "comm/comm_group_impl.h"
#include "core/status_record.h"
#include "os/process.h"

namespace pw {

using Clock = std::chrono::steady_clock;

struct PendingOp::State {
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  std::function<void()> on_success;  // unpack results; runs once, after all works
  std::string what;                  // "pipeline 0 rank 1: recv of ... from rank 0"
  std::chrono::milliseconds timeout{0};
  bool exit_after_failure = false;
  std::optional<Status> result;
};

namespace {

std::string ExceptionText(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    return c10_error->what_without_backtrace();
  }
  return e.what();
}

std::string TensorText(const at::Tensor& t) {
  std::string text = std::to_string(t.numel() * static_cast<int64_t>(t.element_size())) +
                     " bytes ([";
  for (int64_t i = 0; i < t.dim(); ++i) text += (i ? ", " : "") + std::to_string(t.size(i));
  text += "] ";
  text += c10::toString(t.scalar_type());
  text += ")";
  return text;
}

// How early before its deadline a failed wait still counts as timed out.
constexpr auto kDeadlineSlack = std::chrono::milliseconds(20);

std::string SecondsText(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f s", seconds);
  return buffer;
}

// ProcessGroupsOptions::exit_after_failure: once per process, a detached
// thread that ends the process `deadline` from now with `failure` as its
// error, unless it has exited by itself by then.
void ArmExitDeadline(std::chrono::milliseconds deadline, const Status& failure) {
  static std::once_flag armed;
  std::call_once(armed, [&] {
    std::thread([deadline, failure] {
      std::this_thread::sleep_for(deadline);
      std::fprintf(stderr, "pipewright: error: %s (the rank had not exited %.0f s after this failure; exiting)\n",
                   failure.message().c_str(), std::chrono::duration<double>(deadline).count());
      std::fflush(stderr);
      WriteStatusRecordIfAsked(failure);
      _exit(1);
    }).detach();
  });
}

// An operation Gloo refused to start (it throws once a peer's connection
// is closed): as failed as one that timed out, deadline included.
PendingOp FailedToStart(const std::string& what, const std::exception& e, bool exit_after_failure) {
  Status failure =
      Status::IoError(what + " could not start: " + ExceptionText(e)).WithReason(StatusReason::kPeerLost);
  if (exit_after_failure) ArmExitDeadline(std::chrono::seconds(5), failure);
  return PendingOp::Failed(std::move(failure));
}

Status CheckTensor(const at::Tensor& t, const std::string& what) {
  if (!t.defined()) return Status::InvalidArgument(what + ": the tensor is undefined");
  if (!t.device().is_cpu()) {
    return Status::InvalidArgument(what + ": the tensor is on " + t.device().str() +
                                   "; the Gloo groups move CPU tensors only");
  }
  return Status::Ok();
}

}  // namespace

// --- PendingOp ---

PendingOp::PendingOp() = default;
PendingOp::PendingOp(std::unique_ptr<State> state) : state_(std::move(state)) {}
PendingOp::PendingOp(PendingOp&&) noexcept = default;
PendingOp& PendingOp::operator=(PendingOp&&) noexcept = default;
PendingOp::~PendingOp() = default;

PendingOp PendingOp::Failed(Status status) {
  PW_CHECK(!status.ok(), "PendingOp::Failed with an OK status");
  auto state = std::make_unique<State>();
  state->result = std::move(status);
  return PendingOp(std::move(state));
}

Status PendingOp::Wait() {
  if (!state_) return Status::Ok();
  State& s = *state_;
  if (s.result) return *s.result;
  Clock::time_point start = Clock::now();
  Clock::time_point deadline = start + s.timeout;
  for (auto& work : s.works) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    // c10d reads a zero timeout as "no timeout"; never pass it.
    if (left < std::chrono::milliseconds(1)) left = std::chrono::milliseconds(1);
    std::string error;
    try {
      if (!work->wait(left)) error = "the operation was aborted";
    } catch (const std::exception& e) {
      error = ExceptionText(e);
    }
    if (!error.empty()) {
      const Clock::time_point failed_at = Clock::now();
      double waited = std::chrono::duration<double>(failed_at - start).count();
      // Gloo fails a wait at its deadline with a timeout and earlier only
      // when a peer's connection closed; the time tells which (`left` is
      // rounded down to whole milliseconds, hence the slack).
      const StatusReason reason = failed_at + kDeadlineSlack >= deadline ? StatusReason::kPeerTimedOut
                                                                        : StatusReason::kPeerLost;
      s.result = Status::IoError(
          s.what + " failed after " + SecondsText(waited) + " (timeout " +
          SecondsText(std::chrono::duration<double>(s.timeout).count()) + "): " + error +
          ". The peer may have exited or never posted the matching operation; this group "
          "cannot be used any more.").WithReason(reason);
      s.works.clear();
      if (s.exit_after_failure) ArmExitDeadline(std::chrono::seconds(5), *s.result);
      return *s.result;
    }
  }
  s.works.clear();
  if (s.on_success) {
    try {
      s.on_success();
    } catch (const std::exception& e) {
      s.result = Status::Internal(s.what + ": unpacking the result failed: " + ExceptionText(e));
      return *s.result;
    }
    s.on_success = nullptr;
  }
  s.result = Status::Ok();
  return *s.result;
}

bool PendingOp::IsCompleted() const {
  if (!state_ || state_->result) return true;
  for (const auto& work : state_->works) {
    if (!work->isCompleted()) return false;
  }
  return true;
}

// --- CommGroup ---

CommGroup::CommGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  PW_CHECK(impl_ && impl_->backend, "CommGroup without a process group");
}
CommGroup::CommGroup(CommGroup&&) noexcept = default;
CommGroup& CommGroup::operator=(CommGroup&&) noexcept = default;
CommGroup::~CommGroup() = default;

const std::string& CommGroup::name() const { return impl_->name; }
int CommGroup::rank() const { return impl_->backend->getRank(); }
int CommGroup::size() const { return impl_->backend->getSize(); }
std::chrono::milliseconds CommGroup::timeout() const { return impl_->timeout; }
c10d::ProcessGroup& CommGroup::backend() { return *impl_->backend; }

int CommGroup::WorldRankOf(int group_rank) const {
  PW_CHECK(group_rank >= 0 && group_rank < static_cast<int>(impl_->world_ranks.size()),
           "group rank out of range");
  return impl_->world_ranks[group_rank];
}

namespace {

// "group 'pipeline 0' rank 1 (world rank 1): send of 4096 bytes ([1024] Float)
// to rank 2 (world rank 2), tag 0"
std::string Describe(const CommGroup& group, const std::string& op, const std::string& object,
                     const char* direction, int peer, int tag) {
  std::string text = "group '" + group.name() + "' rank " + std::to_string(group.rank()) +
                     " (world rank " + std::to_string(group.WorldRankOf(group.rank())) +
                     "): " + op;
  if (!object.empty()) text += " of " + object;
  if (peer >= 0) {
    text += std::string(" ") + direction + " rank " + std::to_string(peer) + " (world rank " +
            std::to_string(group.WorldRankOf(peer)) + "), tag " + std::to_string(tag);
  } else if (group.size() > 1 && group.size() <= 16) {
    // A collective: its error cannot say which member is late, but it can
    // name them all (with two members, that is the one).
    text += " with world rank(s) ";
    for (int r = 0, listed = 0; r < group.size(); ++r) {
      if (r == group.rank()) continue;
      text += (listed++ ? ", " : "") + std::to_string(group.WorldRankOf(r));
    }
  }
  return text;
}

Status CheckPeer(const CommGroup& group, int peer, int tag, const std::string& what) {
  if (peer < 0 || peer >= group.size()) {
    return Status::InvalidArgument(what + ": peer rank " + std::to_string(peer) +
                                   " is not in the group (size " + std::to_string(group.size()) +
                                   ")");
  }
  if (peer == group.rank()) {
    return Status::InvalidArgument(what + ": a rank cannot send to or receive from itself");
  }
  if (tag < 0) return Status::InvalidArgument(what + ": tag " + std::to_string(tag) + " < 0");
  return Status::Ok();
}

}  // namespace

PendingOp CommGroup::Send(const at::Tensor& tensor, int dst, int tag) {
  std::string what = "group '" + name() + "': send";
  if (Status st = CheckTensor(tensor, what); !st.ok()) return PendingOp::Failed(st);
  what = Describe(*this, "send", TensorText(tensor), "to",
                  dst >= 0 && dst < size() ? dst : -1, tag);
  if (Status st = CheckPeer(*this, dst, tag, what); !st.ok()) return PendingOp::Failed(st);
  auto state = std::make_unique<PendingOp::State>();
  state->what = what;
  state->timeout = impl_->timeout;
  state->exit_after_failure = impl_->exit_after_failure;
  try {
    std::vector<at::Tensor> tensors{tensor.contiguous()};  // Gloo keeps it alive
    state->works.push_back(impl_->backend->send(tensors, dst, tag));
  } catch (const std::exception& e) {
    return FailedToStart(what, e, impl_->exit_after_failure);
  }
  return PendingOp(std::move(state));
}

PendingOp CommGroup::PostRecv(const at::Tensor& buffer, int src, int tag) {
  std::string what = "group '" + name() + "': recv";
  if (Status st = CheckTensor(buffer, what); !st.ok()) return PendingOp::Failed(st);
  what = Describe(*this, "recv", TensorText(buffer), "from",
                  src >= 0 && src < size() ? src : -1, tag);
  if (Status st = CheckPeer(*this, src, tag, what); !st.ok()) return PendingOp::Failed(st);
  auto state = std::make_unique<PendingOp::State>();
  state->what = what;
  state->timeout = impl_->timeout;
  state->exit_after_failure = impl_->exit_after_failure;
  try {
    at::Tensor target = buffer.is_contiguous() ? buffer : at::empty_like(buffer,
                                                     at::MemoryFormat::Contiguous);
    std::vector<at::Tensor> tensors{target};
    state->works.push_back(impl_->backend->recv(tensors, src, tag));
    if (!buffer.is_contiguous()) {
      state->on_success = [buffer, target]() mutable { buffer.copy_(target); };
    }
  } catch (const std::exception& e) {
    return FailedToStart(what, e, impl_->exit_after_failure);
  }
  return PendingOp(std::move(state));
}

PendingOp CommGroup::AllReduce(const std::vector<at::Tensor>& tensors, ReduceKind kind,
                               size_t bucket_bytes) {
  int64_t total_bytes = 0;
  for (const auto& t : tensors) {
    if (t.defined()) total_bytes += t.numel() * static_cast<int64_t>(t.element_size());
  }
  std::string what = Describe(*this, kind == ReduceKind::kSum ? "all-reduce (sum)"
                                                              : "all-reduce (avg)",
                              std::to_string(tensors.size()) + " tensors, " +
                                  std::to_string(total_bytes) + " bytes",
                              "", -1, 0);
  for (const auto& t : tensors) {
    if (Status st = CheckTensor(t, what); !st.ok()) return PendingOp::Failed(st);
    if (t.scalar_type() != tensors.front().scalar_type()) {
      return PendingOp::Failed(Status::InvalidArgument(
          what + ": tensors mix dtypes " + c10::toString(tensors.front().scalar_type()) +
          " and " + c10::toString(t.scalar_type()) + "; reduce each dtype separately"));
    }
  }
  auto state = std::make_unique<PendingOp::State>();
  state->what = what;
  state->timeout = impl_->timeout;
  state->exit_after_failure = impl_->exit_after_failure;
  if (tensors.empty()) return PendingOp(std::move(state));

  // Buckets: consecutive tensors up to bucket_bytes each.
  struct Bucket {
    std::vector<at::Tensor> members;
    at::Tensor flat;  // members packed, or the single contiguous member itself
    bool packed = false;
  };
  std::vector<Bucket> buckets;
  size_t current_bytes = 0;
  for (const auto& t : tensors) {
    size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
    if (buckets.empty() || current_bytes + bytes > bucket_bytes) {
      buckets.emplace_back();
      current_bytes = 0;
    }
    buckets.back().members.push_back(t);
    current_bytes += bytes;
  }
  const int group_size = size();
  try {
    for (auto& bucket : buckets) {
      if (bucket.members.size() == 1 && bucket.members[0].is_contiguous()) {
        bucket.flat = bucket.members[0];
      } else {
        int64_t numel = 0;
        for (const auto& t : bucket.members) numel += t.numel();
        bucket.flat = at::empty({numel}, bucket.members[0].options());
        int64_t offset = 0;
        for (const auto& t : bucket.members) {
          bucket.flat.narrow(0, offset, t.numel()).copy_(t.reshape({-1}));
          offset += t.numel();
        }
        bucket.packed = true;
      }
      std::vector<at::Tensor> one{bucket.flat};
      c10d::AllreduceOptions options;
      options.reduceOp = c10d::ReduceOp::SUM;  // Gloo has no AVG: divide on Wait
      options.timeout = impl_->timeout;
      state->works.push_back(impl_->backend->allreduce(one, options));
    }
  } catch (const std::exception& e) {
    return FailedToStart(what, e, impl_->exit_after_failure);
  }
  state->on_success = [buckets = std::move(buckets), kind, group_size]() mutable {
    for (auto& bucket : buckets) {
      if (kind == ReduceKind::kAvg) bucket.flat.div_(group_size);
      if (!bucket.packed) continue;
      int64_t offset = 0;
      for (auto& t : bucket.members) {
        t.copy_(bucket.flat.narrow(0, offset, t.numel()).view(t.sizes()));
        offset += t.numel();
      }
    }
  };
  return PendingOp(std::move(state));
}

Status CommGroup::Barrier() {
  std::string what = Describe(*this, "barrier", "", "", -1, 0);
  auto state = std::make_unique<PendingOp::State>();
  state->what = what;
  state->timeout = impl_->timeout;
  state->exit_after_failure = impl_->exit_after_failure;
  try {
    c10d::BarrierOptions options;
    options.timeout = impl_->timeout;
    state->works.push_back(impl_->backend->barrier(options));
  } catch (const std::exception& e) {
    return FailedToStart(what, e, impl_->exit_after_failure).Wait();
  }
  return PendingOp(std::move(state)).Wait();
}

}  // namespace pw
