// KindRegistry: the names and rules of every action kind a schedule uses.
//
// Built-in kinds (F, B, I, W, SEND_F, ...) are always present. Users register
// new kinds (offload, reload, recompute, a harvest slot, ...) with a name, a
// default cost, a memory effect and a dependency rule, and every pass (text
// formats, validator, simulator) handles them like the built-ins. A registry
// is a plain value carried by its Schedule: there is no global registry.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "schedule/action.h"

namespace pw {

// User kinds the training executor runs (docs/schedule-language.md,
// "Recomputation" and "Offload"): DROP frees the activations a stage's F saved for a
// microbatch, keeping its input; RECOMPUTE runs that F again before the
// backward. Declared like any kind, e.g.
//   kind DROP memory=-1 after=F priority=100
//   kind RECOMPUTE memory=1 after=DROP before=B
// The cost model charges RECOMPUTE the stage's F time unless told otherwise.
inline constexpr std::string_view kDropKindName = "DROP";
inline constexpr std::string_view kRecomputeKindName = "RECOMPUTE";
// Activation offload (docs/schedule-language.md, "Offload"): OFFLOAD moves
// the activations a stage's F saved for a microbatch to host memory; RELOAD
// brings them back before the backward:
//   kind OFFLOAD cost=0.25 memory=-1 after=F
//   kind RELOAD cost=0.25 memory=1 after=OFFLOAD before=B
inline constexpr std::string_view kOffloadKindName = "OFFLOAD";
inline constexpr std::string_view kReloadKindName = "RELOAD";

struct KindInfo {
  std::string name;              // text notation: [A-Z_]+, e.g. "F", "OFFLOAD"
  bool has_microbatch = true;    // false for REDUCE_GRAD, OPT
  // --- rules for user kinds (ignored for built-ins, which are hard-wired) ---
  double default_cost = 0.0;     // time of one action when the cost model is silent
  // Memory change when the action ends, as a fraction of the stage's
  // activation bytes: offload -1.0, reload +1.0, recompute +1.0.
  double memory_delta_fraction = 0.0;
  // Kinds of the same (stage, microbatch) that must end before this starts
  // (e.g. OFFLOAD after F).
  std::vector<ActionKind> after;
  // Kinds of the same (stage, microbatch) that may start only after this
  // ends (e.g. RELOAD before B and I).
  std::vector<ActionKind> before;
};

class KindRegistry {
 public:
  // A registry holding exactly the built-in kinds.
  KindRegistry();

  // Registers a user kind. Fails if the name is malformed ([A-Z_]+, at most
  // 32 characters), already taken, if a rule names an unknown kind, if a kind
  // without microbatch has rules, or if the registry is full. Not thread-safe; registries are built up front.
  Result<ActionKind> Register(KindInfo info);

  // The info of a known kind; PW_CHECKs that `kind` is registered.
  const KindInfo& Info(ActionKind kind) const;
  std::string_view Name(ActionKind kind) const { return Info(kind).name; }

  // The kind with this exact name, if any.
  std::optional<ActionKind> Find(std::string_view name) const;

  bool Contains(ActionKind kind) const;

  // The registered user kinds, in registration order.
  std::vector<ActionKind> UserKinds() const;

  friend bool operator==(const KindRegistry& a, const KindRegistry& b);

 private:
  std::vector<KindInfo> builtins_;
  std::vector<KindInfo> users_;
};

// Whether an action of `kind` is the model's arithmetic: F, B, I, W, or a
// RECOMPUTE (an F run again). Training's bubble ratios, measured and
// predicted, count these as busy and everything else (sends, receives,
// gradient sync, OPT, DROP, OFFLOAD, RELOAD) as bubble.
inline bool IsModelCompute(const KindRegistry& kinds, ActionKind kind) {
  return IsCompute(kind) || (IsUserKind(kind) && kinds.Info(kind).name == kRecomputeKindName);
}

}  // namespace pw
