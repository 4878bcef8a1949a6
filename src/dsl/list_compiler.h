// The list-scheduling engine behind CompilePipeProgram (dsl/compiler.h).
// Internal to dsl/: compiler.cc checks a PipeProgram against its shape and
// lowers it to a CompilePlan (numbers only, every expression evaluated);
// RunListCompiler then simulates time and emits the per-rank programs.
// docs/schedule-language.md ("Semantics") is the user-facing description.
//
// Model. Every (stage, microbatch) holds up to one task per slot: slot 0 is
// F, slot 1 the backward that produces the input gradient (B, or I with
// split backward), slot 2 W (split only), slots 3.. the declared user kinds.
// A task is *ready* once every dependency it has under
// schedule/dependencies.h has ended (plus communication time when its data
// crosses ranks), and, for a user kind with a `before` rule, once one of the
// actions it precedes has every other dependency met ("just in time").
// Whenever a rank is free it starts its best ready task that its limits
// allow (RankLimits); a rank with a pinned sequence runs that first.
//
// Cost: O(actions x (log actions + cells a rank owns)) time, no allocation
// per action; the tables are O(stages x microbatches x slots).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/status.h"
#include "dsl/pipe_program.h"
#include "schedule/schedule.h"
#include "sim/cost_model.h"

namespace pw::dsl::internal {

inline constexpr int kSlotF = 0;
inline constexpr int kSlotBackward = 1;  // B, or I with split backward
inline constexpr int kSlotW = 2;
inline constexpr int kFirstUserSlot = 3;

inline constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

// Per-rank numbers of the policy, evaluated from the program's expressions.
struct RankLimits {
  // Activations the rank may hold: in shares of a microbatch (a stage of a
  // rank with v stages adds 1/v at F and frees it at B or W), or in bytes.
  // A microbatch's first forward on the rank reserves its whole share.
  double cap = std::numeric_limits<double>::infinity();
  // Forwards that may wait for their backward (B or I) to start: warm-up + 1.
  int64_t max_forwards_waiting = kNoLimit;
  // W's left pending (I started, W not) before W takes the highest
  // priority, while the rank still has forwards to start.
  int64_t max_deferred_w = kNoLimit;
  // Breadth-first: microbatches per traversal group (kNoLimit: one group).
  int64_t group = kNoLimit;
};

// One declared user kind as the engine sees it.
struct UserSlot {
  ActionKind kind = ActionKind::kIdle;
  std::vector<char> on_stage;      // [stage]: the kind has an action per microbatch there
  std::vector<int> after_slots;    // slots of the same cell that must end first
  std::vector<int> before_slots;   // slots of the same cell that wait for it
};

struct CompilePlan {
  int num_microbatches = 0;
  bool split_backward = false;
  bool cap_in_bytes = false;
  Traversal traversal = Traversal::kDepthFirst;
  std::vector<UserSlot> user_slots;        // slot kFirstUserSlot + i
  // Kind priority per slot, lower runs first; W may be overridden by
  // RankLimits::max_deferred_w.
  std::vector<int> slot_priority;
  std::vector<RankLimits> limits;          // per rank
  // Per rank: the pinned sequence (null when the policy decides alone).
  std::vector<const PinnedSequence*> pinned;
  // Prefix for error messages: "file.pipe" or the program's name.
  std::string source;
};

// Runs the list scheduler and fills `schedule.programs` (which must be
// empty; placement, microbatches and kinds set). `costs` must be resolved
// against `schedule`. Fails with Deadlock naming each stuck rank and what
// holds it when the program cannot finish. Pure; never throws.
Status RunListCompiler(const CompilePlan& plan, const CostModel& costs, Schedule& schedule);

}  // namespace pw::dsl::internal
