#include "schedule/dependencies.h"

namespace pw {

std::string DescribeDependency(const Dependency& d, std::string_view user_kind_name) {
  std::string at = "(" + std::to_string(d.stage) + "," + std::to_string(d.microbatch) + ")";
  switch (d.event) {
    case EventType::kForwardDone: return "F" + at;
    case EventType::kInputGradDone: return "B/I" + at;
    case EventType::kWeightGradDone: return "B/W" + at;
    case EventType::kStageGradsDone: return "the weight gradients of every microbatch of stage " + std::to_string(d.stage);
    case EventType::kUserKindDone: return std::string(user_kind_name) + at;
  }
  return "?";
}

}  // namespace pw

#include "schedule/schedule.h"

namespace pw {

DependencyRule::DependencyRule(const Schedule& schedule)
    : schedule_(schedule), num_microbatches_(schedule.num_microbatches), last_stage_(schedule.num_stages() - 1) {
  const KindRegistry& kinds = schedule.kinds;
  std::vector<ActionKind> users = kinds.UserKinds();
  user_kind_index_.assign(users.size(), -1);
  waits_for_.assign(kMaxKinds, {});
  for (size_t i = 0; i < users.size(); ++i) {
    user_kind_index_[i] = static_cast<int>(i);
    for (ActionKind k : kinds.Info(users[i]).before) {
      waits_for_[static_cast<int>(k)].push_back(users[i]);
      has_before_rules_ = true;
    }
  }
  const size_t cells = static_cast<size_t>(schedule.num_stages()) * std::max(1, num_microbatches_);
  present_.assign(users.size(), std::vector<char>());
  // Without user kinds there is nothing to find: skip the scan of every action.
  if (users.empty()) return;
  for (const Program& p : schedule.programs) {
    for (const Action& a : p) {
      if (!IsUserKind(a.kind) || !kinds.Contains(a.kind)) continue;
      if (a.stage < 0 || a.stage >= schedule.num_stages() || a.microbatch < 0 ||
          a.microbatch >= num_microbatches_) {
        continue;  // out of range: reported by whoever walks the schedule
      }
      auto& bits = present_[UserKindIndex(a.kind)];
      if (bits.empty()) bits.assign(cells, 0);
      bits[static_cast<size_t>(a.stage) * num_microbatches_ + a.microbatch] = 1;
    }
  }
}

int DependencyRule::UserKindIndex(ActionKind k) const {
  return user_kind_index_[static_cast<int>(k) - static_cast<int>(ActionKind::kFirstUser)];
}

bool DependencyRule::Present(ActionKind user_kind, StageId s, MicrobatchId mb) const {
  if (mb < 0) return false;
  const auto& bits = present_[UserKindIndex(user_kind)];
  return !bits.empty() && bits[static_cast<size_t>(s) * num_microbatches_ + mb];
}

void DependencyRule::CollectUserKindAfter(const Action& a, std::vector<Dependency>& out) const {
  const StageId s = a.stage;
  const MicrobatchId mb = a.microbatch;
  for (ActionKind k : schedule_.kinds.Info(a.kind).after) {
    switch (k) {
      case ActionKind::kForward: out.push_back({EventType::kForwardDone, s, mb, ActionKind::kIdle, false}); break;
      case ActionKind::kBackward:
      case ActionKind::kBackwardInput:
        out.push_back({EventType::kInputGradDone, s, mb, ActionKind::kIdle, false});
        break;
      case ActionKind::kBackwardWeight:
        out.push_back({EventType::kWeightGradDone, s, mb, ActionKind::kIdle, false});
        break;
      default:
        if (IsUserKind(k) && Present(k, s, mb)) out.push_back({EventType::kUserKindDone, s, mb, k, false});
        break;
    }
  }
}

void DependencyRule::CollectBeforeRules(const Action& a, std::vector<Dependency>& out) const {
  // Kinds that declared themselves `before` this action's kind.
  for (ActionKind u : waits_for_[static_cast<int>(a.kind)]) {
    if (Present(u, a.stage, a.microbatch)) {
      out.push_back({EventType::kUserKindDone, a.stage, a.microbatch, u, false});
    }
  }
}

}  // namespace pw
