#include "runtime/executor.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <string>

#include "model/stage_module.h"
#include "os/memory.h"
#include "runtime/allocator_stats.h"

namespace pw {
namespace {

template <typename Map, typename K>
bool Take(Map& map, const K& key, at::Tensor& out) {
  auto it = map.find(key);
  if (it == map.end()) return false;
  out = std::move(it->second);
  map.erase(it);
  return true;
}

}  // namespace

namespace {

// The registered kinds the executor runs, by name: resolved once, in
// Executor::Create, so that no action compares names.
Executor::MemoryAction MemoryActionNamed(std::string_view name) {
  using M = Executor::MemoryAction;
  if (name == kDropKindName) return M::kDrop;
  if (name == kRecomputeKindName) return M::kRecompute;
  if (name == kOffloadKindName) return M::kOffload;
  if (name == kReloadKindName) return M::kReload;
  return M::kNone;
}

// Runs `body`, turning what LibTorch or the standard library throws into
// Internal, so that a failing action fails its step with a message instead
// of ending the process.
template <class Body>
Status ExceptionsAsStatus(Body&& body) {
  try {
    return body();
  } catch (const c10::Error& e) {
    return Status::Internal(std::string("LibTorch error: ") + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Status::Internal(std::string("exception: ") + e.what());
  }
}

}  // namespace

Result<std::unique_ptr<Executor>> Executor::Create(Schedule lowered,
                                                   std::vector<StageModule*> stages,
                                                   const ExecutorOptions& options) {
  const std::string where = "rank " + std::to_string(options.rank);
  if (options.rank < 0 || options.rank >= lowered.num_ranks()) {
    return Status::InvalidArgument(where + ": the schedule has " +
                                   std::to_string(lowered.num_ranks()) + " ranks");
  }
  if (lowered.num_ranks() > 1 && options.pipeline == nullptr) {
    return Status::InvalidArgument(where + ": a multi-rank schedule needs a pipeline group");
  }
  const auto& owned = lowered.placement.StagesOf(options.rank);
  if (stages.size() != owned.size()) {
    return Status::InvalidArgument(where + " owns " + std::to_string(owned.size()) +
                                   " stages but was given " + std::to_string(stages.size()));
  }
  for (size_t i = 0; i < stages.size(); ++i) {
    if (stages[i] == nullptr || stages[i]->stage() != owned[i]) {
      return Status::InvalidArgument(where + ": stage modules must be the rank's stages, ascending");
    }
  }
  bool seen_opt = false;
  for (const Action& a : lowered.programs[options.rank]) {
    const std::string name = "action " + lowered.ActionName(a);
    if (IsUserKind(a.kind) && MemoryActionNamed(lowered.kinds.Name(a.kind)) == MemoryAction::kNone) {
      return Status::FailedPrecondition(where + ": " + name + ": the executor runs the built-in kinds, " +
                                        std::string(kDropKindName) + ", " + std::string(kRecomputeKindName) +
                                        ", " + std::string(kOffloadKindName) + " and " +
                                        std::string(kReloadKindName) + ", not kind " + lowered.kinds.Info(a.kind).name);
    }
    if (a.kind == ActionKind::kIdle) continue;
    if (a.stage < 0 || a.stage >= lowered.num_stages() ||
        lowered.placement.RankOf(a.stage) != options.rank) {
      return Status::FailedPrecondition(where + ": " + name + " is for a stage this rank does not own");
    }
    if (a.kind == ActionKind::kOptimizer) {
      seen_opt = true;
    } else if (seen_opt && (IsCompute(a.kind) || a.kind == ActionKind::kReduceGrad)) {
      return Status::FailedPrecondition(
          where + ": " + name + " comes after an OPT; OPT actions must end the program "
          "(lower with AddGradientSync)");
    }
  }
  if (options.receive_window < 1) {
    return Status::InvalidArgument(where + ": receive_window must be at least 1, got " +
                                   std::to_string(options.receive_window));
  }
  if (!seen_opt) {
    return Status::FailedPrecondition(where + ": the program has no OPT action; lower the schedule "
                                      "with AddGradientSync and InsertCommunication first");
  }
  return std::unique_ptr<Executor>(new Executor(std::move(lowered), std::move(stages), options));
}

Executor::Executor(Schedule lowered, std::vector<StageModule*> stages,
                   const ExecutorOptions& options)
    : schedule_(std::move(lowered)), options_(options) {
  stage_of_.assign(schedule_.num_stages(), nullptr);
  for (StageModule* s : stages) {
    stage_of_[s->stage()] = s;
    own_stages_.push_back(s->stage());
    optimizers_.emplace(s->stage(), AdamW(s->Parameters(), options_.optimizer));
  }
  if (options_.pipeline != nullptr) sends_ = std::make_unique<BackgroundWaiter>();
  for (ActionKind kind : schedule_.kinds.UserKinds()) {
    const size_t index = static_cast<size_t>(kind) - static_cast<size_t>(ActionKind::kFirstUser);
    if (memory_actions_.size() <= index) memory_actions_.resize(index + 1, MemoryAction::kNone);
    memory_actions_[index] = MemoryActionNamed(schedule_.kinds.Name(kind));
  }
  const Program& prog = program();
  // F registers its saved tensors only for the microbatches the program
  // offloads: every other forward runs exactly as without offload.
  std::map<int, std::set<MicrobatchId>> offloaded;
  for (const Action& a : prog) {
    if (MemoryActionOf(a.kind) == MemoryAction::kOffload) {
      offloaded[a.stage].insert(a.microbatch);
    }
  }
  for (StageModule* s : stages) s->SetOffloadedMicrobatches(offloaded[s->stage()]);
  for (size_t i = 0; i < prog.size(); ++i) {
    if (prog[i].kind == ActionKind::kRecvForward || prog[i].kind == ActionKind::kRecvBackward) {
      recv_positions_.push_back(static_cast<int>(i));
    }
  }
  // Where a stage's gradients become final: its last gradient action (B,
  // or W: every Linear), and its last I when no B follows it (the
  // LayerNorm and embedding gradients, which I computes).
  std::map<int, int> last_grad, last_input;
  for (size_t i = 0; i < prog.size(); ++i) {
    const Action& a = prog[i];
    if (a.kind == ActionKind::kBackward || a.kind == ActionKind::kBackwardWeight) last_grad[a.stage] = static_cast<int>(i);
    if (a.kind == ActionKind::kBackwardInput) last_grad[a.stage] = last_input[a.stage] = static_cast<int>(i);
    if (a.kind == ActionKind::kBackward) last_input.erase(a.stage);
  }
  for (const auto& [stage, i] : last_grad) finalizing_actions_.insert(i);
  for (const auto& [stage, i] : last_input) finalizing_actions_.insert(i);
  if (options_.data_parallel != nullptr && options_.data_parallel->size() > 1) {
    for (int s : own_stages_) {
      grad_buckets_[s] = std::make_unique<GradBuckets>(Stage(s).Parameters(), options_.data_parallel);
    }
  }
}

Executor::~Executor() = default;

int64_t Executor::OffloadedBytes() const {
  int64_t total = 0;
  for (int s : own_stages_) total += stage_of_[s]->offload_counters().bytes_offloaded;
  return total;
}

int Executor::Tag(int stage, int mb, bool gradient) const {
  return (mb * schedule_.num_stages() + stage) * 2 + (gradient ? 1 : 0);
}

void Executor::ResetStepState() {
  inputs_.clear();
  grads_in_.clear();
  to_send_f_.clear();
  to_send_b_.clear();
  recvs_.clear();
  next_recv_ = 0;
  for (auto& [stage, buckets] : grad_buckets_) buckets->BeginStep();
  loss_sum_ = 0;
  clipped_ = false;
  grad_norm_ = 0;
}

void Executor::TopUpReceives() {
  const Program& prog = program();
  while (recvs_.size() < static_cast<size_t>(options_.receive_window) && next_recv_ < recv_positions_.size()) {
    const Action& a = prog[recv_positions_[next_recv_++]];
    const bool fwd = a.kind == ActionKind::kRecvForward;
    // RECV_F(s) gets the activation leaving s-1; RECV_B(s) the gradient leaving s+1.
    const int peer_stage = fwd ? a.stage - 1 : a.stage + 1;
    at::Tensor buffer =
        at::empty({options_.microbatch_size, options_.seq_len, options_.d_model}, at::kFloat);
    PendingOp op = options_.pipeline->PostRecv(
        buffer, schedule_.placement.RankOf(peer_stage), Tag(peer_stage, a.microbatch, !fwd));
    recvs_.emplace(std::make_pair(Key{a.stage, a.microbatch}, fwd),
                   std::make_pair(buffer, std::move(op)));
  }
}

Result<StepOutcome> Executor::RunStep(int64_t step, const std::vector<TokenBatch>& batches) {
  if (static_cast<int>(batches.size()) != schedule_.num_microbatches) {
    return Status::InvalidArgument("rank " + std::to_string(options_.rank) + ": step " +
                                   std::to_string(step) + " got " +
                                   std::to_string(batches.size()) + " microbatches, the schedule has " +
                                   std::to_string(schedule_.num_microbatches));
  }
  ResetStepState();
  step_ = step;
  batches_ = &batches;
  Result<StepOutcome> outcome = RunStepBody(step);
  // The idle tail of the step (kBetweenSteps) ends when RunStep returns.
  if (idle_) SetBusy();
  return outcome;
}

void Executor::SetIdle(IdleReason reason, int action_index) {
  if (options_.idle_listener == nullptr || idle_) return;
  idle_ = true;
  options_.idle_listener->OnIdle(IdleEdge{reason, step_, action_index});
}

void Executor::SetBusy() {
  if (!idle_) return;
  idle_ = false;
  options_.idle_listener->OnBusy();
}

Status Executor::WaitReportingIdle(PendingOp& op, IdleReason reason) {
  const bool listen = options_.idle_listener != nullptr;
  // A RECV's span is its wait already; a norm wait is inside OPT's span.
  const bool record = options_.record_timeline && reason == IdleReason::kNormWait;
  if ((!listen && !record) || op.IsCompleted()) return op.Wait();
  if (listen) SetIdle(reason, action_index_);
  const Timeline::Clock::time_point start = Timeline::Clock::now();
  Status waited = op.Wait();
  if (record) action_wait_ = {start, Timeline::Clock::now()};
  if (listen) SetBusy();
  return waited;
}

Status Executor::StartTimelineOnce() {
  if (timeline_started_) return Status::Ok();
  // One shared origin for the whole timeline: every rank takes its clock
  // right after this barrier, once. Later steps are placed by each rank's
  // own steady clock from there, so no step waits for a barrier (the
  // ranks' clocks are the same clock on one host; across hosts they
  // drift by parts per million: microseconds over a run's minutes).
  timeline_started_ = true;
  if (options_.pipeline == nullptr || options_.pipeline->size() <= 1) return Status::Ok();
  SetIdle(IdleReason::kBetweenSteps, -1);
  Status status = options_.pipeline->Barrier();
  SetBusy();
  return status;
}

Status Executor::RunTimedAction(size_t i) {
  using Clock = std::chrono::steady_clock;
  const Action& action = program()[i];
  return ExceptionsAsStatus([&] {
    if (i == 0) {
      for (int s : own_stages_) Stage(s).ZeroGrad();
      if (options_.pipeline != nullptr) TopUpReceives();
    }
    const Clock::time_point action_start = Clock::now();
    action_index_ = static_cast<int>(i);
    action_wait_ = {};
    Status status = DispatchWithBuckets(action);
    const MemoryAction memory = MemoryActionOf(action.kind);
    const bool offload = memory == MemoryAction::kOffload || memory == MemoryAction::kReload;
    const bool model_compute = IsModelCompute(schedule_.kinds, action.kind);
    if (model_compute || offload || options_.record_timeline) {
      const Clock::time_point action_end = Clock::now();
      const double seconds = std::chrono::duration<double>(action_end - action_start).count();
      if (model_compute) busy_seconds_ += seconds;
      if (offload) offload_seconds_ += seconds;
      if (options_.record_timeline && status.ok() && action.kind != ActionKind::kIdle) {
        timeline_.Add(action, action_start, action_end, action_wait_.first, action_wait_.second);
      }
    }
    return status;
  });
}

void Executor::RecordStepMemory() {
  peak_allocated_ = static_cast<double>(CpuAllocatorStats().peak_bytes);
  peak_resident_ = 0;
  if (resident_peak_known_) {
    if (Result<ResidentMemory> rss = ReadResidentMemory(); rss.ok()) peak_resident_ = static_cast<double>(rss->peak_bytes);
  }
}

Result<StepOutcome> Executor::RunStepBody(int64_t step) {
  lr_ = LearningRate(options_.optimizer, step);
  const Program& prog = program();
  using Clock = std::chrono::steady_clock;
  const std::string where = "rank " + std::to_string(options_.rank) + ", step " + std::to_string(step);
  if (options_.record_timeline) {
    PW_RETURN_IF_ERROR(StartTimelineOnce().WithContext(where + ", timeline barrier"));
    step_origin_ = Clock::now();
    timeline_.BeginStep(step, step_origin_);
  }
  ResetCpuAllocatorPeak();
  resident_peak_known_ = ResetResidentPeak().ok();
  const Clock::time_point program_start = Clock::now();
  busy_seconds_ = 0;
  offload_seconds_ = 0;
  const int64_t offloaded_before = OffloadedBytes();
  for (size_t i = 0; i < prog.size(); ++i) {
    const MemoryAction memory = MemoryActionOf(prog[i].kind);
    if (recompute_held_ && (memory == MemoryAction::kDrop || memory == MemoryAction::kRecompute)) continue;
    if (Status status = RunTimedAction(i); !status.ok()) {
      for (int s : own_stages_) Stage(s).DiscardAll();
      return status.WithContext(where + ", action " + schedule_.ActionName(prog[i]) + " (#" + std::to_string(i) +
                                " of the rank's program)");
    }
  }
  program_seconds_ = std::chrono::duration<double>(Clock::now() - program_start).count();
  offloaded_bytes_ = static_cast<double>(OffloadedBytes() - offloaded_before);
  RecordStepMemory();
  // The rest of the step waits for sends and for the slowest rank.
  SetIdle(IdleReason::kBetweenSteps, -1);
  StepOutcome outcome;
  const Status status = ExceptionsAsStatus([&] { return Finish(outcome); });
  if (!status.ok()) return status.WithContext(where + ", end of step");
  return outcome;
}

Status Executor::Finish(StepOutcome& outcome) {
  if (sends_ != nullptr) PW_RETURN_IF_ERROR(sends_->Drain());
  for (int s : own_stages_) {
    if (Stage(s).HeldMicrobatches() != 0) {
      return Status::FailedPrecondition("stage " + std::to_string(s) + " still holds " +
                                        std::to_string(Stage(s).HeldMicrobatches()) +
                                        " microbatches: the program lacks their backward (or W)");
    }
  }
  // Every rank's busy and program time, memory peaks and offload traffic,
  // and the loss sum (non-zero only on the last stage's rank), gathered by
  // one sum over disjoint slots:
  // [busy | program | allocated | resident | offloaded | offload time | loss].
  const int ranks = schedule_.num_ranks();
  at::Tensor gathered = at::zeros({6 * ranks + 1}, at::kDouble);
  double* slot = gathered.data_ptr<double>();
  slot[6 * ranks] = loss_sum_;
  slot[options_.rank] = busy_seconds_;
  slot[ranks + options_.rank] = program_seconds_;
  slot[2 * ranks + options_.rank] = peak_allocated_;
  slot[3 * ranks + options_.rank] = peak_resident_;
  slot[4 * ranks + options_.rank] = offloaded_bytes_;
  slot[5 * ranks + options_.rank] = offload_seconds_;
  if (options_.pipeline != nullptr && options_.pipeline->size() > 1) {
    PW_RETURN_IF_ERROR(options_.pipeline->AllReduce({gathered}, ReduceKind::kSum).Wait());
  }
  slot = gathered.data_ptr<double>();
  PW_RETURN_IF_ERROR(ReduceLoss(slot[6 * ranks], schedule_.num_microbatches, outcome.loss, /*over_pipeline=*/false));
  double busy = 0, longest = 0;
  for (int r = 0; r < ranks; ++r) {
    busy += slot[r];
    longest = std::max(longest, slot[ranks + r]);
  }
  outcome.peak_allocated_bytes.assign(slot + 2 * ranks, slot + 3 * ranks);
  outcome.peak_resident_bytes.assign(slot + 3 * ranks, slot + 4 * ranks);
  outcome.offloaded_bytes.assign(slot + 4 * ranks, slot + 5 * ranks);
  outcome.offload_seconds.assign(slot + 5 * ranks, slot + 6 * ranks);
  outcome.bubble_ratio = longest > 0 ? std::max(0.0, 1.0 - busy / (ranks * longest)) : 0.0;
  outcome.grad_norm = grad_norm_;
  outcome.lr = lr_;
  return Status::Ok();
}

Status Executor::ReduceLoss(double loss_sum, int count, double& mean, bool over_pipeline) {
  // Only the rank holding the last stage has a non-zero sum.
  at::Tensor loss = at::full({1}, loss_sum, at::kDouble);
  if (over_pipeline && options_.pipeline != nullptr && options_.pipeline->size() > 1) {
    PW_RETURN_IF_ERROR(options_.pipeline->AllReduce({loss}, ReduceKind::kSum).Wait());
  }
  if (options_.data_parallel != nullptr && options_.data_parallel->size() > 1) {
    PW_RETURN_IF_ERROR(options_.data_parallel->AllReduce({loss}, ReduceKind::kAvg).Wait());
  }
  mean = loss.item<double>() / count;
  return Status::Ok();
}

Result<double> Executor::Evaluate(const std::vector<TokenBatch>& batches) {
  const std::string where = "rank " + std::to_string(options_.rank) + ", validation";
  if (batches.empty()) return Status::InvalidArgument(where + ": no batches");
  double loss_sum = 0, mean = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    const Status status = ExceptionsAsStatus([&] { return EvaluateBatch(static_cast<int>(i), batches[i], loss_sum); });
    if (!status.ok()) return status.WithContext(where + " batch " + std::to_string(i));
  }
  PW_RETURN_IF_ERROR(ReduceLoss(loss_sum, static_cast<int>(batches.size()), mean));
  return mean;
}

Status Executor::EvaluateBatch(int index, const TokenBatch& batch, double& loss_sum) {
  constexpr int kEvalTagBase = 1 << 30;
  const auto& placement = schedule_.placement;
  const int num_stages = schedule_.num_stages();
  at::Tensor carried;  // output of the previous stage when it is on this rank
  for (int s = 0; s < num_stages; ++s) {
    if (placement.RankOf(s) != options_.rank) continue;
    StageModule& stage = Stage(s);
    at::Tensor input;
    if (stage.is_first()) {
      input = batch.tokens;
    } else if (placement.RankOf(s - 1) == options_.rank) {
      input = carried;
    } else {
      input = at::empty({batch.tokens.size(0), batch.tokens.size(1), options_.d_model}, at::kFloat);
      PW_RETURN_IF_ERROR(options_.pipeline
                             ->PostRecv(input, placement.RankOf(s - 1),
                                        kEvalTagBase + index * num_stages + s - 1)
                             .Wait());
    }
    PW_ASSIGN_OR_RETURN(at::Tensor out,
                        stage.Evaluate(input, stage.is_last() ? batch.targets : at::Tensor()));
    if (stage.is_last()) {
      loss_sum += out.item<double>();
    } else if (placement.RankOf(s + 1) == options_.rank) {
      carried = out;
    } else {
      PW_RETURN_IF_ERROR(
          options_.pipeline->Send(out, placement.RankOf(s + 1), kEvalTagBase + index * num_stages + s)
              .Wait());
    }
  }
  return Status::Ok();
}

// The actions that finish a stage's gradients report each parameter as it
// becomes final, so that its bucket's all-reduce starts before the stage's
// REDUCE_GRAD.
Status Executor::DispatchWithBuckets(const Action& a) {
  if (grad_buckets_.empty() || finalizing_actions_.count(action_index_) == 0) return Dispatch(a);
  GradBuckets* buckets = grad_buckets_.at(a.stage).get();
  Stage(a.stage).SetGradAccumulatedCallback([buckets](size_t index) { buckets->MarkReady(index); });
  Status status;
  try {
    status = Dispatch(a);
  } catch (...) {
    Stage(a.stage).SetGradAccumulatedCallback({});
    throw;
  }
  Stage(a.stage).SetGradAccumulatedCallback({});
  return status;
}

Status Executor::Dispatch(const Action& a) {
  switch (a.kind) {
    case ActionKind::kForward:
      return RunForward(a);
    case ActionKind::kBackward:
      return RunBackward(a, /*split=*/false);
    case ActionKind::kBackwardInput:
      return RunBackward(a, /*split=*/true);
    case ActionKind::kBackwardWeight:
      return Stage(a.stage).BackwardWeight(a.microbatch);
    case ActionKind::kSendForward:
      return RunSend(a, /*forward=*/true);
    case ActionKind::kRecvForward:
      return RunRecv(a, /*forward=*/true);
    case ActionKind::kSendBackward:
      return RunSend(a, /*forward=*/false);
    case ActionKind::kRecvBackward:
      return RunRecv(a, /*forward=*/false);
    case ActionKind::kReduceGrad:
      return RunReduceGrad(a);
    case ActionKind::kOptimizer:
      return RunOptimizer(a);
    case ActionKind::kIdle:
      return Status::Ok();
    case ActionKind::kFirstUser:
      break;
  }
  // Registered kinds (kFirstUser + i): Create() admitted only these four.
  switch (MemoryActionOf(a.kind)) {
    case MemoryAction::kDrop: return Stage(a.stage).DropActivations(a.microbatch);
    case MemoryAction::kRecompute: return Stage(a.stage).Recompute(a.microbatch);
    case MemoryAction::kOffload: return Stage(a.stage).OffloadActivations(a.microbatch);
    case MemoryAction::kReload: return Stage(a.stage).ReloadActivations(a.microbatch);
    case MemoryAction::kNone: break;
  }
  return Status::FailedPrecondition("kind " + std::string(schedule_.kinds.Name(a.kind)) + " is not executable");
}

Status Executor::RunForward(const Action& a) {
  StageModule& stage = Stage(a.stage);
  const TokenBatch& batch = (*batches_)[a.microbatch];
  at::Tensor input;
  if (stage.is_first()) {
    input = batch.tokens;
  } else if (!Take(inputs_, Key{a.stage, a.microbatch}, input)) {
    return Status::FailedPrecondition("the input of this forward was never received (no RECV_F "
                                      "before it, and the previous stage is not on this rank)");
  }
  PW_ASSIGN_OR_RETURN(at::Tensor out,
                      stage.Forward(a.microbatch, input, stage.is_last() ? batch.targets : at::Tensor()));
  if (stage.is_last()) {
    loss_sum_ += out.item<double>();
  } else if (schedule_.placement.RankOf(a.stage + 1) == options_.rank) {
    inputs_[Key{a.stage + 1, a.microbatch}] = out;  // V-shape turn: hand over in memory
  } else {
    to_send_f_[Key{a.stage, a.microbatch}] = out;
  }
  return Status::Ok();
}

Status Executor::RunBackward(const Action& a, bool split) {
  StageModule& stage = Stage(a.stage);
  at::Tensor grad;
  if (stage.is_last()) {
    // d(mean over m microbatches)/d(loss of one microbatch).
    grad = at::full({1}, 1.0 / schedule_.num_microbatches, at::kFloat);
  } else if (!Take(grads_in_, Key{a.stage, a.microbatch}, grad)) {
    return Status::FailedPrecondition("the output gradient of this backward was never received "
                                      "(no RECV_B before it, and the next stage is not on this rank)");
  }
  Result<at::Tensor> dx = split ? stage.BackwardInput(a.microbatch, grad)
                                : stage.BackwardFull(a.microbatch, grad);
  if (!dx.ok()) return dx.status();
  if (stage.is_first()) return Status::Ok();
  if (schedule_.placement.RankOf(a.stage - 1) == options_.rank) {
    grads_in_[Key{a.stage - 1, a.microbatch}] = *dx;
  } else {
    to_send_b_[Key{a.stage, a.microbatch}] = *dx;
  }
  return Status::Ok();
}

Status Executor::RunSend(const Action& a, bool forward) {
  at::Tensor t;
  if (!Take(forward ? to_send_f_ : to_send_b_, Key{a.stage, a.microbatch}, t)) {
    return Status::FailedPrecondition(std::string("nothing to send: the ") +
                                      (forward ? "F" : "B or I") + " of this stage and microbatch "
                                      "has not run on this rank before it");
  }
  const int peer_stage = forward ? a.stage + 1 : a.stage - 1;
  sends_->Add(options_.pipeline->Send(t, schedule_.placement.RankOf(peer_stage),
                                      Tag(a.stage, a.microbatch, !forward)));
  return sends_->FirstError();  // an earlier send failed: stop now, not at the end of the step
}

Status Executor::RunRecv(const Action& a, bool forward) {
  auto it = recvs_.find(std::make_pair(Key{a.stage, a.microbatch}, forward));
  PW_CHECK(it != recvs_.end(), "receive not posted");
  PendingOp& op = it->second.second;
  PW_RETURN_IF_ERROR(WaitReportingIdle(op, IdleReason::kRecvWait));
  (forward ? inputs_ : grads_in_)[Key{a.stage, a.microbatch}] = it->second.first;
  recvs_.erase(it);
  TopUpReceives();
  return Status::Ok();
}

}  // namespace pw
