// The dependency rule of the IR, in one place (docs/cost-model.md
// "Semantics"). Both the validator's dry run and the simulator use it through
// ListSchedule (schedule/list_scheduler.h).
//
//   F(s,mb)       after F(s-1,mb)                        (cross-rank: + comm)
//   B/I(s,mb)     after F(s,mb) and B/I(s+1,mb)          (last stage: F only)
//   W(s,mb)       after I(s,mb)
//   SEND_F(s,mb)  after F(s,mb);    RECV_F(s,mb) after F(s-1,mb) + comm
//   SEND_B(s,mb)  after B/I(s,mb);  RECV_B(s,mb) after B/I(s+1,mb) + comm
//   REDUCE_GRAD(s), OPT(s)  after every microbatch's weight gradient of s
//   user kind U   after the kinds in U.after, same (s,mb); and every kind in
//                 U.before waits for U(s,mb) when the schedule contains it.
#pragma once

#include <cstdint>
#include <string>

#include "core/ids.h"
#include "schedule/action.h"

namespace pw {

// What an action waits for: an event of (stage, microbatch).
enum class EventType : uint8_t {
  kForwardDone = 0,     // F(s,mb) ended
  kInputGradDone,       // B(s,mb) or I(s,mb) ended
  kWeightGradDone,      // B(s,mb) or W(s,mb) ended
  kStageGradsDone,      // every microbatch's weight gradient of stage s ended (mb ignored)
  kUserKindDone,        // a user kind's action on (s,mb) ended; see Dependency::user_kind
};

struct Dependency {
  EventType event;
  StageId stage;
  MicrobatchId microbatch;
  ActionKind user_kind = ActionKind::kIdle;  // for kUserKindDone
  // True when the event is produced on another stage's rank and its data
  // must travel: the waiter sees it comm time after it happened.
  bool carries_data = false;
};

// Short text for error messages, e.g. "F(2,0)", "B/I(3,1)", "all W of stage 1".
std::string DescribeDependency(const Dependency& d, std::string_view user_kind_name = {});

}  // namespace pw

#include <vector>

namespace pw {

struct Schedule;

// Computes the dependencies of actions of one schedule. Construction scans
// the schedule once (to know which user-kind actions exist); Collect is then
// O(number of dependencies). Thread-compatible.
class DependencyRule {
 public:
  explicit DependencyRule(const Schedule& schedule);

  // Replaces `out` with the dependencies of `a`. `a` must be in range (stage
  // < num_stages, microbatch < num_microbatches where the kind has one).
  // Inline, forced: the simulator calls it for every action (tens of
  // millions), and GCC kept it out of line for its size (11 % of `schedule
  // sim` at p = 1024); the rare paths below are calls.
  [[gnu::always_inline]] void Collect(const Action& a, std::vector<Dependency>& out) const {
    out.clear();
    const StageId s = a.stage;
    const MicrobatchId mb = a.microbatch;
    switch (a.kind) {
      case ActionKind::kForward:
      case ActionKind::kRecvForward:
        if (s > 0) out.push_back({EventType::kForwardDone, s - 1, mb, ActionKind::kIdle, true});
        break;
      case ActionKind::kBackward:
      case ActionKind::kBackwardInput:
        out.push_back({EventType::kForwardDone, s, mb, ActionKind::kIdle, false});
        if (s < last_stage_) out.push_back({EventType::kInputGradDone, s + 1, mb, ActionKind::kIdle, true});
        break;
      case ActionKind::kBackwardWeight:
      case ActionKind::kSendBackward:
        out.push_back({EventType::kInputGradDone, s, mb, ActionKind::kIdle, false});
        break;
      case ActionKind::kSendForward:
        out.push_back({EventType::kForwardDone, s, mb, ActionKind::kIdle, false});
        break;
      case ActionKind::kRecvBackward:
        if (s < last_stage_) out.push_back({EventType::kInputGradDone, s + 1, mb, ActionKind::kIdle, true});
        break;
      case ActionKind::kReduceGrad:
      case ActionKind::kOptimizer:
        out.push_back({EventType::kStageGradsDone, s, kNoMicrobatch, ActionKind::kIdle, false});
        break;
      case ActionKind::kIdle:
        break;
      default:
        CollectUserKindAfter(a, out);
        break;
    }
    if (has_before_rules_) CollectBeforeRules(a, out);
  }

  // The event that `a` produces when it ends, if any of these kinds:
  // F -> kForwardDone; B -> kInputGradDone and kWeightGradDone; I -> kInputGradDone;
  // W -> kWeightGradDone; a user kind -> kUserKindDone.
  int num_user_kinds() const { return static_cast<int>(user_kind_index_.size()); }
  // Dense index 0..num_user_kinds()-1 of a user kind, for tables.
  int UserKindIndex(ActionKind k) const;

 private:
  bool Present(ActionKind user_kind, StageId s, MicrobatchId mb) const;
  void CollectUserKindAfter(const Action& a, std::vector<Dependency>& out) const;
  void CollectBeforeRules(const Action& a, std::vector<Dependency>& out) const;


  const Schedule& schedule_;
  int num_microbatches_;
  StageId last_stage_;
  bool has_before_rules_ = false;
  std::vector<int> user_kind_index_;                 // by kind id - kFirstUser
  std::vector<std::vector<ActionKind>> waits_for_;   // by kind id: user kinds with it in `before`
  std::vector<std::vector<char>> present_;           // by user index: [s*m+mb]
};

}  // namespace pw
