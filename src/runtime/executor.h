// Executor: interprets one rank's program of a lowered schedule, action by
// action, with one exhaustive switch over ActionKind — the only place where
// a schedule turns into computation and communication.
//
// Communication is explicit: the program must come from InsertCommunication
// (schedule/lowering.h), so it holds SEND_F/RECV_F/SEND_B/RECV_B wherever
// data crosses ranks, and AddGradientSync, so it holds REDUCE_GRAD and OPT.
// Neighbouring stages on the same rank (V-shape) hand tensors over in memory.
//
//   F(s,mb)      StageModule::Forward; stage 0 reads token ids and the last
//                stage targets from the step's batch (no data is sent)
//   B / I / W    BackwardFull / BackwardInput / BackwardWeight; the last
//                stage's backward scales its loss by 1/m (gradient
//                accumulation over m microbatches = mean loss)
//   RECV_F/B     receives are posted ahead of the program position, at
//                most ExecutorOptions::receive_window at a time, in program
//                order (buffers [microbatch_size, seq_len, d_model] float32,
//                so boundary memory is O(window), not O(microbatches)); the
//                action waits for its receive and posts the next one. A
//                sender whose receive is not posted yet is not blocked: Gloo
//                holds the data until the peer asks for it.
//   SEND_F/B     asynchronous; a background thread waits for each send in
//                turn (comm/background_waiter.h), so a sent tensor is freed
//                when the peer has it; the step waits for the rest at its end
//   REDUCE_GRAD  the average of the stage's gradients over the
//                data-parallel group (no-op when dp = 1), in buckets
//                (runtime/grad_buckets.h) of which most already started
//                during the stage's last gradient action (B or W), each as
//                soon as its gradients were final; REDUCE_GRAD starts the
//                rest. The rank's first OPT waits for all of them, so the
//                all-reduce overlaps the rank's remaining compute
//   OPT          at the rank's first OPT of a step: the global gradient norm
//                (squared norms summed over the pipeline group) and the clip
//                coefficient; then AdamW on the stage with the step's LR
//
// Message tags: (mb * S + s) * 2 for the activation leaving stage s, + 1 for
// the gradient leaving stage s (S = number of stages).
//
// Timeline (record_timeline): the first recorded step starts with a
// barrier over the pipeline group (the timeline's shared origin; no later
// step waits for one), then every action's [start, end) is recorded into
// timeline() (runtime/timeline.h); off by default, when the only cost is one
// branch per action.
//
// Idle edges (ExecutorOptions::idle_listener, runtime/idle_listener.h): the
// executor tells a listener when its rank stops computing to wait, so that
// bubble harvesting can run side tasks there. Exactly:
//   kRecvWait      OnIdle({kRecvWait, step, i}) right before a RECV (action i
//                  of the rank's program) waits, only when its receive has
//                  not completed yet (PendingOp::IsCompleted, non-blocking);
//                  OnBusy() when the wait returns (also on error).
//   kNormWait      OnIdle({kNormWait, step, i}) at the rank's first OPT
//                  (action i) when the all-reduce of the squared gradient
//                  norms has not completed once this rank's share is in:
//                  the rank waits for the others to end their backward.
//                  OnBusy() when it returns (also on error).
//   kBetweenSteps  OnIdle({kBetweenSteps, step, -1}) (a) after the last
//                  action of the rank's program — what is left of RunStep is
//                  waiting: for its sends and for the step's loss/timing
//                  all-reduces, i.e. for the slowest rank — with OnBusy()
//                  when RunStep returns (any path); and (b) around the
//                  timeline's one barrier (see "Timeline"; OnIdle before
//                  it, OnBusy after it). Between RunStep calls the
//                  caller computes (data, validation, checkpoints): busy.
// Edges strictly alternate and every OnIdle gets its OnBusy before RunStep
// returns. A null listener costs one branch per RECV and per step.
//
// Thread-safety: one thread (the rank's main thread) drives an Executor.
// Failure: RunStep returns a Status naming rank, step and action for a
// schedule the rank cannot run (input never received, user kinds other
// than DROP, RECOMPUTE, OFFLOAD and RELOAD, schedule/kind_registry.h), for
// communication errors (a peer died or timed out) and for LibTorch errors
// (c10::Error, caught here). After a failure the groups must not be reused.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "comm/background_waiter.h"
#include "comm/comm_group.h"
#include "core/status.h"
#include "runtime/data.h"
#include "runtime/grad_buckets.h"
#include "runtime/idle_listener.h"
#include "runtime/optimizer.h"
#include "runtime/timeline.h"
#include "schedule/schedule.h"

namespace pw {

class StageModule;

struct ExecutorOptions {
  int rank = 0;                        // this rank's pipeline rank = schedule rank
  CommGroup* pipeline = nullptr;       // null only when the schedule has one rank
  CommGroup* data_parallel = nullptr;  // null or size 1: REDUCE_GRAD is a no-op
  int microbatch_size = 1;
  int seq_len = 1;
  int d_model = 1;
  OptimizerConfig optimizer;
  int receive_window = 4;              // receives posted ahead (>= 1); see RECV_F/B
  bool record_timeline = false;        // see "Timeline" above
  IdleListener* idle_listener = nullptr;  // see "Idle edges" above; not owned
};

struct StepOutcome {
  double loss = 0;       // mean loss over every microbatch of every replica
  double grad_norm = 0;  // global norm before clipping
  double lr = 0;
  // Measured over the pipeline: 1 - sum of the ranks' compute time (F, B,
  // I, W, RECOMPUTE: IsModelCompute) / (ranks x the longest rank's program
  // time), with real times; runtime/bubble_prediction.h predicts the same.
  double bubble_ratio = 0;
  // Per pipeline rank, the peak of the step (from its start to the end of
  // its program): bytes held by LibTorch CPU tensors (0 unless the counting
  // allocator is installed, runtime/allocator_stats.h) and resident set
  // size (VmHWM; 0 where /proc does not tell).
  std::vector<double> peak_allocated_bytes;
  std::vector<double> peak_resident_bytes;
  // Per pipeline rank: bytes OFFLOAD copied to the host this step (RELOAD
  // copies as many back) and the time spent in OFFLOAD and RELOAD actions,
  // seconds. Zero for ranks whose program offloads nothing.
  std::vector<double> offloaded_bytes;
  std::vector<double> offload_seconds;
};

class Executor {
 public:
  // What a registered kind (schedule/kind_registry.h: DROP, RECOMPUTE,
  // OFFLOAD, RELOAD) does to a stage's saved activations; kNone for the
  // built-in kinds. Resolved from the names once, in Create.
  enum class MemoryAction { kNone, kDrop, kRecompute, kOffload, kReload };

  // `lowered`: a schedule after AddGradientSync and InsertCommunication;
  // `stages`: this rank's StageModules, exactly the stages the placement
  // gives it (not owned; must outlive the executor). FailedPrecondition for
  // a program this executor cannot run: a stage it does not own, user kinds
  // other than DROP, RECOMPUTE, OFFLOAD and RELOAD (run as StageModule's
  // DropActivations, Recompute, OffloadActivations and ReloadActivations;
  // each stage's F registers its saved tensors for the microbatches the
  // program offloads, StageModule::SetOffloadedMicrobatches),
  // missing OPT, or an OPT before a compute or REDUCE_GRAD action.
  static Result<std::unique_ptr<Executor>> Create(Schedule lowered,
                                                  std::vector<StageModule*> stages,
                                                  const ExecutorOptions& options);
  ~Executor();

  // One training step: zeroes gradients, runs the rank's program over
  // `batches` (the m microbatches of this replica, in microbatch order), then
  // reduces the loss. Blocks on compute and on peers (bounded by the groups'
  // timeouts). Every rank of the job must call it with the same step.
  Result<StepOutcome> RunStep(int64_t step, const std::vector<TokenBatch>& batches);

  // Forward-only pass over `batches` (validation, no autograd, dropout off):
  // the mean loss over every microbatch of every replica. Stages run in
  // model order per microbatch, each boundary a blocking send/receive (tags
  // from 2^30 up, apart from the step's). Every rank of the job must call it
  // with the same number of batches. Blocks; errors name rank and batch.
  Result<double> Evaluate(const std::vector<TokenBatch>& batches);

  const Schedule& schedule() const { return schedule_; }
  const Program& program() const { return schedule_.programs[options_.rank]; }
  // Every recorded step's spans (empty unless options.record_timeline).
  const Timeline& timeline() const { return timeline_; }
  // Turns timeline recording on or off from the next step (e.g. off once
  // the first steps' costs were measured). Not during RunStep.
  void SetRecordTimeline(bool on) { options_.record_timeline = on; }
  // Whether the next steps skip the program's DROP and RECOMPUTE actions
  // (`train --recompute-paired`): each microbatch's graph then stays from
  // its F to its backward — the same program without recomputation, in the
  // same order. Skipped actions are not timed or traced. Not during RunStep.
  void HoldRecompute(bool held) { recompute_held_ = held; }
  // The origin of the last step that recorded a timeline (its spans'
  // start_us are measured from it); the epoch before any.
  Timeline::Clock::time_point step_origin() const { return step_origin_; }

 private:
  using Key = std::pair<int, int>;  // (stage, microbatch)
  Executor(Schedule lowered, std::vector<StageModule*> stages, const ExecutorOptions& options);

  Status Dispatch(const Action& action);
  Status DispatchWithBuckets(const Action& action);
  Status RunForward(const Action& a);
  Status RunBackward(const Action& a, bool split);
  Status RunSend(const Action& a, bool forward);
  Status RunRecv(const Action& a, bool forward);
  Status RunReduceGrad(const Action& a);
  Status RunOptimizer(const Action& a);
  // A tied model whose embedding (first stage) and head (last stage) are on
  // different stages: each owner's copy of the tied weight gets the sum of
  // both gradients (exchanged over the pipeline group when the owners are
  // different ranks), so clipping and AdamW keep the copies equal.
  Status SyncTiedGrads();
  // The squared norm of this rank's gradients, the head's tied copy left
  // out (its gradient equals the embedding's after SyncTiedGrads).
  double OwnSquaredGradNorm();
  void TopUpReceives();   // posts receives until receive_window are pending
  Status EvaluateBatch(int index, const TokenBatch& batch, double& loss_sum);
  // The mean loss over every replica; `over_pipeline` false when loss_sum
  // is already summed over the pipeline group.
  Status ReduceLoss(double loss_sum, int count, double& mean, bool over_pipeline = true);
  Status Finish(StepOutcome& outcome);
  Result<StepOutcome> RunStepBody(int64_t step);
  // Steps of RunStepBody: the timeline's shared origin (a barrier, the
  // first time only); program action i, timed into busy/offload seconds
  // and the timeline, exceptions turned into a Status; the step's memory
  // peaks.
  Status StartTimelineOnce();
  Status RunTimedAction(size_t i);
  void RecordStepMemory();
  void SetIdle(IdleReason reason, int action_index);  // no-op without a listener
  void SetBusy();
  // Waits for `op`, reporting the wait as idle (`reason`, the current
  // action) when it has not completed yet and a listener is set; a norm
  // wait is also kept for the action's timeline span (action_wait_).
  Status WaitReportingIdle(PendingOp& op, IdleReason reason);
  void ResetStepState();
  StageModule& Stage(int s) { return *stage_of_[s]; }
  int64_t OffloadedBytes() const;  // OFFLOAD's bytes over the own stages, since they were built
  int Tag(int stage, int mb, bool gradient) const;

  // What a registered kind does to the stage's saved activations, or kNone
  // for every other kind.
  MemoryAction MemoryActionOf(ActionKind kind) const {
    if (!IsUserKind(kind)) return MemoryAction::kNone;
    const size_t index = static_cast<size_t>(kind) - static_cast<size_t>(ActionKind::kFirstUser);
    return index < memory_actions_.size() ? memory_actions_[index] : MemoryAction::kNone;
  }

  Schedule schedule_;
  ExecutorOptions options_;
  std::vector<MemoryAction> memory_actions_;  // by user kind (kind - kFirstUser)
  std::vector<StageModule*> stage_of_;  // indexed by stage id; null if not ours
  std::vector<int> own_stages_;
  std::map<int, AdamW> optimizers_;     // stage -> its optimizer

  // Per-step state.
  int64_t step_ = 0;
  int action_index_ = -1;       // the program position being dispatched
  bool idle_ = false;           // an OnIdle awaits its OnBusy
  Timeline::Clock::time_point step_origin_{};
  // The current action's wait for other ranks (OPT's norm all-reduce),
  // for its timeline span; empty when it did not wait.
  std::pair<Timeline::Clock::time_point, Timeline::Clock::time_point> action_wait_{};
  const std::vector<TokenBatch>* batches_ = nullptr;
  std::map<Key, at::Tensor> inputs_;      // F's input (received or handed over)
  std::map<Key, at::Tensor> grads_in_;    // backward's output gradient
  std::map<Key, at::Tensor> to_send_f_;   // F outputs waiting for SEND_F
  std::map<Key, at::Tensor> to_send_b_;   // input grads waiting for SEND_B
  std::map<std::pair<Key, bool>, std::pair<at::Tensor, PendingOp>> recvs_;  // posted, not yet consumed
  std::vector<int> recv_positions_;  // program positions of the RECV actions, in order
  size_t next_recv_ = 0;             // recv_positions_[next_recv_] is the next to post
  std::unique_ptr<BackgroundWaiter> sends_;  // null without a pipeline group
  // Data-parallel only: per own stage, its gradient buckets; and the
  // program positions of the actions that make gradients final.
  std::map<int, std::unique_ptr<GradBuckets>> grad_buckets_;
  std::set<int> finalizing_actions_;
  double loss_sum_ = 0;
  bool clipped_ = false;
  double grad_norm_ = 0;
  double lr_ = 0;
  double busy_seconds_ = 0;     // in F, B, I, W, RECOMPUTE this step
  double program_seconds_ = 0;  // the whole program this step
  bool timeline_started_ = false;  // the one timeline barrier has been passed
  bool resident_peak_known_ = false;  // the step start could reset VmHWM
  bool recompute_held_ = false;  // see HoldRecompute
  double peak_allocated_ = 0;   // this step's peaks, bytes
  double peak_resident_ = 0;
  double offloaded_bytes_ = 0;  // this step's OFFLOAD bytes and OFFLOAD/RELOAD time
  double offload_seconds_ = 0;
  Timeline timeline_;
};

}  // namespace pw
