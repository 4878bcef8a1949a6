// The dependency rule of the IR, in one place (DESIGN.md "Default simulator
// semantics"). Both the validator's dry run and the simulator use it through
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
  void Collect(const Action& a, std::vector<Dependency>& out) const;

  // The event that `a` produces when it ends, if any of these kinds:
  // F -> kForwardDone; B -> kInputGradDone and kWeightGradDone; I -> kInputGradDone;
  // W -> kWeightGradDone; a user kind -> kUserKindDone.
  int num_user_kinds() const { return static_cast<int>(user_kind_index_.size()); }
  // Dense index 0..num_user_kinds()-1 of a user kind, for tables.
  int UserKindIndex(ActionKind k) const;

 private:
  bool Present(ActionKind user_kind, StageId s, MicrobatchId mb) const;

  const Schedule& schedule_;
  int num_microbatches_;
  std::vector<int> user_kind_index_;                 // by kind id - kFirstUser
  std::vector<std::vector<ActionKind>> waits_for_;   // by kind id: user kinds with it in `before`
  std::vector<std::vector<char>> present_;           // by user index: [s*m+mb]
};

}  // namespace pw
