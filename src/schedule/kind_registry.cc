#include "schedule/kind_registry.h"

#include <algorithm>

namespace pw {

KindRegistry::KindRegistry() {
  auto add = [this](const char* name, bool has_mb) {
    KindInfo info;
    info.name = name;
    info.has_microbatch = has_mb;
    builtins_.push_back(std::move(info));
  };
  // Order must follow the ActionKind enumerators.
  add("F", true);
  add("B", true);
  add("I", true);
  add("W", true);
  add("SEND_F", true);
  add("RECV_F", true);
  add("SEND_B", true);
  add("RECV_B", true);
  add("REDUCE_GRAD", false);
  add("OPT", false);
  add("IDLE", false);
  PW_CHECK(builtins_.size() == static_cast<size_t>(kNumBuiltinKinds));
}

Result<ActionKind> KindRegistry::Register(KindInfo info) {
  const std::string& n = info.name;
  if (n.empty() || n.size() > 32 ||
      !std::all_of(n.begin(), n.end(), [](char c) { return (c >= 'A' && c <= 'Z') || c == '_'; })) {
    return Status::InvalidArgument("kind name '" + n +
                                   "' is invalid: use 1-32 upper-case letters or '_' (e.g. OFFLOAD)");
  }
  if (Find(n)) return Status::InvalidArgument("kind '" + n + "' is already defined; pick another name");
  if (static_cast<int>(ActionKind::kFirstUser) + users_.size() >= static_cast<size_t>(kMaxKinds)) {
    return Status::FailedPrecondition("too many user kinds (at most " +
                                      std::to_string(kMaxKinds - static_cast<int>(ActionKind::kFirstUser)) + ")");
  }
  if (!info.has_microbatch && (!info.after.empty() || !info.before.empty())) {
    return Status::InvalidArgument("kind '" + n +
                                   "' has no microbatch, so it cannot have after/before rules (they relate "
                                   "actions of the same stage and microbatch)");
  }
  for (const auto* list : {&info.after, &info.before}) {
    for (ActionKind k : *list) {
      if (!Contains(k)) {
        return Status::InvalidArgument("kind '" + n + "' names an unknown kind id " +
                                       std::to_string(static_cast<int>(k)) + " in its rule");
      }
    }
  }
  users_.push_back(std::move(info));
  return static_cast<ActionKind>(static_cast<int>(ActionKind::kFirstUser) + users_.size() - 1);
}

bool KindRegistry::Contains(ActionKind kind) const {
  int id = static_cast<int>(kind);
  if (id < kNumBuiltinKinds) return true;
  int user = id - static_cast<int>(ActionKind::kFirstUser);
  return user >= 0 && user < static_cast<int>(users_.size());
}

const KindInfo& KindRegistry::Info(ActionKind kind) const {
  PW_CHECK(Contains(kind), "unknown action kind id " + std::to_string(static_cast<int>(kind)));
  int id = static_cast<int>(kind);
  if (id < kNumBuiltinKinds) return builtins_[id];
  return users_[id - static_cast<int>(ActionKind::kFirstUser)];
}

std::optional<ActionKind> KindRegistry::Find(std::string_view name) const {
  for (size_t i = 0; i < builtins_.size(); ++i) {
    if (builtins_[i].name == name) return static_cast<ActionKind>(i);
  }
  for (size_t i = 0; i < users_.size(); ++i) {
    if (users_[i].name == name) return static_cast<ActionKind>(static_cast<int>(ActionKind::kFirstUser) + i);
  }
  return std::nullopt;
}

std::vector<ActionKind> KindRegistry::UserKinds() const {
  std::vector<ActionKind> out;
  for (size_t i = 0; i < users_.size(); ++i) {
    out.push_back(static_cast<ActionKind>(static_cast<int>(ActionKind::kFirstUser) + i));
  }
  return out;
}

bool operator==(const KindRegistry& a, const KindRegistry& b) {
  if (a.users_.size() != b.users_.size()) return false;
  for (size_t i = 0; i < a.users_.size(); ++i) {
    const KindInfo& x = a.users_[i];
    const KindInfo& y = b.users_[i];
    if (x.name != y.name || x.has_microbatch != y.has_microbatch || x.default_cost != y.default_cost ||
        x.memory_delta_fraction != y.memory_delta_fraction || x.after != y.after || x.before != y.before) {
      return false;
    }
  }
  return true;
}

}  // namespace pw
