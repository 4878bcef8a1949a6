// The unit of a schedule: one action (stage, kind, microbatch) that one rank
// performs. Kinds are the built-in ones below plus kinds a user registers in
// a KindRegistry (schedule/kind_registry.h); registered kinds take ids from
// ActionKind::kFirstUser upwards.
//
// Text notation is PyTorch's (torch.distributed.pipelining): "2F0" is stage
// 2, forward, microbatch 0; "1SEND_F3", "0REDUCE_GRAD" (no microbatch).
#pragma once

#include <cstdint>
#include <functional>

#include "core/ids.h"

namespace pw {

enum class ActionKind : uint8_t {
  kForward = 0,        // F: forward of one microbatch through one stage
  kBackward,           // B: full backward (input and weight gradients)
  kBackwardInput,      // I: backward for input gradients only
  kBackwardWeight,     // W: backward for weight gradients only
  kSendForward,        // SEND_F: send F's output of (stage, mb) to stage+1
  kRecvForward,        // RECV_F: receive F's input of (stage, mb) from stage-1
  kSendBackward,       // SEND_B: send the input gradient of (stage, mb) to stage-1
  kRecvBackward,       // RECV_B: receive the output gradient of (stage, mb) from stage+1
  kReduceGrad,         // REDUCE_GRAD: data-parallel gradient reduction of a stage
  kOptimizer,          // OPT: optimizer step of a stage
  kIdle,               // an empty step in a step-aligned grid (CSV empty cell)
  kFirstUser = 32,     // user-registered kinds: kFirstUser + i
};

inline constexpr int kNumBuiltinKinds = static_cast<int>(ActionKind::kIdle) + 1;
inline constexpr int kMaxKinds = 256;

inline bool IsUserKind(ActionKind k) { return k >= ActionKind::kFirstUser; }

struct Action {
  StageId stage = 0;
  MicrobatchId microbatch = kNoMicrobatch;
  ActionKind kind = ActionKind::kForward;

  friend bool operator==(const Action&, const Action&) = default;
};

// Shorthands for generators and tests.
inline Action Fwd(StageId s, MicrobatchId mb) { return {s, mb, ActionKind::kForward}; }
inline Action Bwd(StageId s, MicrobatchId mb) { return {s, mb, ActionKind::kBackward}; }
inline Action BwdI(StageId s, MicrobatchId mb) { return {s, mb, ActionKind::kBackwardInput}; }
inline Action BwdW(StageId s, MicrobatchId mb) { return {s, mb, ActionKind::kBackwardWeight}; }

// True for F, B, I, W: the kinds that compute (and that the compute-only
// CSV of torch.distributed.pipelining holds).
inline bool IsCompute(ActionKind k) {
  return k == ActionKind::kForward || k == ActionKind::kBackward ||
         k == ActionKind::kBackwardInput || k == ActionKind::kBackwardWeight;
}

// True for the backward kinds that produce the stage's input gradient (B, I).
inline bool ProducesInputGrad(ActionKind k) {
  return k == ActionKind::kBackward || k == ActionKind::kBackwardInput;
}

// True for the backward kinds that produce the weight gradient (B, W).
inline bool ProducesWeightGrad(ActionKind k) {
  return k == ActionKind::kBackward || k == ActionKind::kBackwardWeight;
}

inline bool IsCommunication(ActionKind k) {
  return k == ActionKind::kSendForward || k == ActionKind::kRecvForward ||
         k == ActionKind::kSendBackward || k == ActionKind::kRecvBackward;
}

}  // namespace pw

template <>
struct std::hash<pw::Action> {
  size_t operator()(const pw::Action& a) const noexcept {
    return (static_cast<size_t>(a.stage) * 1000003u) ^
           (static_cast<size_t>(static_cast<uint32_t>(a.microbatch)) << 8) ^
           static_cast<size_t>(a.kind);
  }
};
