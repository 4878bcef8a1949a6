// CompilePipeProgram's front end: checks the program against its shape,
// evaluates every expression per rank, ranks the kinds, and hands a
// CompilePlan to the list scheduler (dsl/list_compiler.h). The semantics are
// documented in docs/schedule-language.md, section "Semantics".
#include "dsl/compiler.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include "core/units.h"
#include "dsl/list_compiler.h"
#include "schedule/generators.h"

namespace pw::dsl {
namespace {

using internal::CompilePlan;
using internal::kFirstUserSlot;
using internal::kSlotBackward;
using internal::kSlotF;
using internal::kSlotW;
using internal::RankLimits;
using internal::UserSlot;

// "file.pipe:12:5: " (or "file.pipe: " when the construct has no position).
std::string Where(const PipeProgram& program, const SourceLoc& loc) {
  std::string at = program.source_name.empty() ? "<" + program.name + ">" : program.source_name;
  if (loc.line > 0) at += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column);
  return at + ": ";
}

Status ErrorAt(const PipeProgram& program, const SourceLoc& loc, const std::string& message,
               StatusCode code = StatusCode::kInvalidArgument) {
  return Status(code, Where(program, loc) + message);
}

// `loc` when the parser recorded it, else `fallback` (programs built in code).
const SourceLoc& LocOr(const SourceLoc& loc, const SourceLoc& fallback) { return loc.line > 0 ? loc : fallback; }

Result<Placement> BuildPlacement(const PipeProgram& program, int p) {
  const PlacementSpec& spec = program.placement;
  Result<Placement> placement = Status::Internal("unset");
  switch (spec.style) {
    case PlacementStyle::kSequential: placement = Placement::Sequential(p); break;
    case PlacementStyle::kVShape: placement = Placement::VShape(p); break;
    case PlacementStyle::kInterleaved:
      if (spec.chunks < 1) {
        return ErrorAt(program, spec.loc,
                       "an interleaved placement needs at least 1 chunk per rank, got " + std::to_string(spec.chunks));
      }
      placement = Placement::Interleaved(p, spec.chunks);
      break;
    case PlacementStyle::kExplicit: {
      const auto& list = spec.stage_to_rank;
      if (static_cast<int>(list.size()) < p) {
        return ErrorAt(program, spec.loc,
                       "the explicit placement lists " + std::to_string(list.size()) + " stages for " +
                           std::to_string(p) + " ranks; every rank needs at least one stage, so list at least " +
                           std::to_string(p) + " (or compile for fewer ranks)");
      }
      std::vector<char> owns(p, 0);
      for (size_t s = 0; s < list.size(); ++s) {
        if (list[s] < 0 || list[s] >= p) {
          return ErrorAt(program, spec.loc,
                         "the explicit placement puts stage " + std::to_string(s) + " on rank " +
                             std::to_string(list[s]) + ", but the pipeline has " + std::to_string(p) +
                             " ranks (0.." + std::to_string(p - 1) + ")");
        }
        owns[list[s]] = 1;
      }
      for (int r = 0; r < p; ++r) {
        if (!owns[r]) {
          return ErrorAt(program, spec.loc,
                         "the explicit placement gives rank " + std::to_string(r) +
                             " no stage; every rank needs at least one");
        }
      }
      placement = Placement::FromStageToRank(list, p);
      break;
    }
  }
  if (!placement.ok()) return ErrorAt(program, spec.loc, placement.status().message());
  return placement;
}

bool IsSplitKind(ActionKind k) { return k == ActionKind::kBackwardInput || k == ActionKind::kBackwardWeight; }

// The slot an action of kind `k` fills, or -1 when the program cannot hold
// it (B with split backward, I/W without, kinds the compiler does not place).
int SlotOf(ActionKind k, bool split, const std::vector<ActionKind>& user_kinds) {
  switch (k) {
    case ActionKind::kForward: return kSlotF;
    case ActionKind::kBackward: return split ? -1 : kSlotBackward;
    case ActionKind::kBackwardInput: return split ? kSlotBackward : -1;
    case ActionKind::kBackwardWeight: return split ? kSlotW : -1;
    default: break;
  }
  auto it = std::find(user_kinds.begin(), user_kinds.end(), k);
  return it == user_kinds.end() ? -1 : kFirstUserSlot + static_cast<int>(it - user_kinds.begin());
}

// Registers the declared kinds and fills plan.user_slots.
Status DeclareKinds(const PipeProgram& program, bool split, Schedule& schedule, CompilePlan& plan,
                    std::vector<ActionKind>& user_kinds) {
  const int num_stages = schedule.num_stages();
  for (const KindDecl& decl : program.kinds) {
    if (!decl.info.has_microbatch) {
      return ErrorAt(program, decl.loc,
                     "kind " + decl.info.name + " has no microbatch; the compiler places one action per (stage, "
                     "microbatch), so declare it per microbatch");
    }
    for (StageId s : decl.stages) {
      if (s < 0 || s >= num_stages) {
        return ErrorAt(program, decl.loc,
                       "kind " + decl.info.name + " lists stage " + std::to_string(s) + ", but the pipeline has " +
                           std::to_string(num_stages) + " stages (0.." + std::to_string(num_stages - 1) + ")");
      }
    }
    Result<ActionKind> kind = schedule.kinds.Register(decl.info);
    if (!kind.ok()) return ErrorAt(program, decl.loc, kind.status().message());
    user_kinds.push_back(*kind);
  }
  for (size_t i = 0; i < program.kinds.size(); ++i) {
    const KindDecl& decl = program.kinds[i];
    UserSlot slot;
    slot.kind = user_kinds[i];
    slot.on_stage.assign(num_stages, decl.stages.empty() ? 1 : 0);
    for (StageId s : decl.stages) slot.on_stage[s] = 1;
    for (ActionKind k : decl.info.after) {
      // `after B` and `after I` both wait for the input gradient, `after W`
      // for the weight gradient (which B also produces): valid in both modes.
      int target = SlotOf(k, split, user_kinds);
      if (k == ActionKind::kBackward || k == ActionKind::kBackwardInput) target = kSlotBackward;
      if (k == ActionKind::kBackwardWeight) target = split ? kSlotW : kSlotBackward;
      if (target < 0) {
        return ErrorAt(program, decl.loc,
                       "kind " + decl.info.name + " is 'after " + std::string(schedule.kinds.Name(k)) +
                           "'; user kinds can follow only F, B, I, W and other declared kinds");
      }
      slot.after_slots.push_back(target);
    }
    for (ActionKind k : decl.info.before) {
      const int target = SlotOf(k, split, user_kinds);
      if (target < 0) {
        std::string hint = k == ActionKind::kBackward ? "; the program splits the backward, so write 'before I'"
                           : IsSplitKind(k)           ? "; the program does not split the backward, so write 'before B'"
                                                      : "; user kinds can precede only F, B, I, W and declared kinds";
        return ErrorAt(program, decl.loc,
                       "kind " + decl.info.name + " is 'before " + std::string(schedule.kinds.Name(k)) + "'" + hint);
      }
      slot.before_slots.push_back(target);
    }
    plan.user_slots.push_back(std::move(slot));
  }
  return Status::Ok();
}

// Kind priority per slot (lower runs first). Order: declared kinds with
// priority > 0 not in the list; the list; the built-ins it leaves out (F,
// backward, W); the other declared kinds. Declared kinds among themselves
// by priority (higher first), then declaration order.
Status RankKinds(const PipeProgram& program, bool split, const Schedule& schedule,
                 const std::vector<ActionKind>& user_kinds, CompilePlan& plan) {
  const int num_slots = kFirstUserSlot + static_cast<int>(user_kinds.size());
  std::vector<int> listed(num_slots, -1);
  std::vector<ActionKind> seen;
  const auto& list = program.policy.kind_priority;
  auto names = [&](ActionKind k) { return std::find(list.begin(), list.end(), k) != list.end(); };
  int position = 0;
  for (ActionKind k : list) {
    if (std::find(seen.begin(), seen.end(), k) != seen.end()) {
      return ErrorAt(program, program.policy.loc,
                     "the kind priority lists " + std::string(schedule.kinds.Name(k)) + " twice");
    }
    seen.push_back(k);
    // Programs built in code keep the default {B, F} when they split the
    // backward: B then stands for I > W (DefaultKindPriority's reading), and
    // I for B without split; W without split has nothing to order.
    if (k == ActionKind::kBackward && split) {
      if (!names(ActionKind::kBackwardInput) && listed[kSlotBackward] < 0) listed[kSlotBackward] = position++;
      if (!names(ActionKind::kBackwardWeight) && listed[kSlotW] < 0) listed[kSlotW] = position++;
      continue;
    }
    if (k == ActionKind::kBackwardWeight && !split) continue;
    if (k == ActionKind::kBackwardInput && !split && names(ActionKind::kBackward)) continue;
    const int slot = k == ActionKind::kBackwardInput ? kSlotBackward : SlotOf(k, split, user_kinds);
    if (slot < 0) {
      const std::string name = schedule.kinds.Contains(k) ? std::string(schedule.kinds.Name(k))
                                                          : "kind #" + std::to_string(static_cast<int>(k));
      return ErrorAt(program, program.policy.loc,
                     "the kind priority names " + name + "; it may name only F, B, I, W and declared kinds");
    }
    if (listed[slot] < 0) listed[slot] = position++;
  }
  struct Entry {
    int group, sub1, sub2, slot;
  };
  std::vector<Entry> entries;
  for (int slot = 0; slot < num_slots; ++slot) {
    if (slot == kSlotW && !split) continue;
    if (listed[slot] >= 0) {
      entries.push_back({1, listed[slot], 0, slot});
    } else if (slot < kFirstUserSlot) {
      entries.push_back({2, slot, 0, slot});
    } else {
      const int prio = program.kinds[slot - kFirstUserSlot].priority;
      entries.push_back({prio > 0 ? 0 : 3, -prio, slot, slot});
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.group, a.sub1, a.sub2) < std::tie(b.group, b.sub1, b.sub2);
  });
  plan.slot_priority.assign(num_slots, num_slots);
  for (size_t i = 0; i < entries.size(); ++i) plan.slot_priority[entries[i].slot] = static_cast<int>(i);
  return Status::Ok();
}

Result<int64_t> EvalFor(const PipeProgram& program, const Expr& expr, const SourceLoc& loc, const char* what,
                        const ExprVars& vars) {
  Result<int64_t> v = expr.Evaluate(vars);
  if (!v.ok()) {
    return ErrorAt(program, loc,
                   std::string(what) + " '" + expr.ToString() + "' fails for rank " + std::to_string(vars.r) + ": " +
                       v.status().message());
  }
  return v;
}

Status EvaluateLimits(const PipeProgram& program, bool split, const Schedule& schedule, const CostModel& costs,
                      CompilePlan& plan) {
  const int p = schedule.num_ranks();
  const OrderPolicy& policy = program.policy;
  if (policy.max_deferred_w && !split) {
    return ErrorAt(program, LocOr(policy.max_deferred_w_loc, policy.loc),
                   "max_deferred_w applies only to split backward (W actions); enable split backward or drop it");
  }
  plan.limits.assign(p, RankLimits{});
  for (RankId r = 0; r < p; ++r) {
    const auto& stages = schedule.placement.StagesOf(r);
    const ExprVars vars{.p = p, .r = r, .m = schedule.num_microbatches, .v = static_cast<int64_t>(stages.size()),
                        .S = schedule.num_stages()};
    RankLimits& lim = plan.limits[r];
    if (policy.warmup) {
      const SourceLoc& loc = LocOr(policy.warmup_loc, policy.loc);
      PW_ASSIGN_OR_RETURN(int64_t w, EvalFor(program, *policy.warmup, loc, "warmup", vars));
      if (w < 0) {
        return ErrorAt(program, loc,
                       "warmup '" + policy.warmup->ToString() + "' is " + std::to_string(w) + " for rank " +
                           std::to_string(r) + "; it must be at least 0 (write e.g. max(0, ...))");
      }
      lim.max_forwards_waiting = w == internal::kNoLimit ? w : w + 1;
    }
    if (policy.max_deferred_w) {
      const SourceLoc& loc = LocOr(policy.max_deferred_w_loc, policy.loc);
      PW_ASSIGN_OR_RETURN(int64_t d, EvalFor(program, *policy.max_deferred_w, loc, "max_deferred_w", vars));
      if (d < 0) {
        return ErrorAt(program, loc,
                       "max_deferred_w '" + policy.max_deferred_w->ToString() + "' is " + std::to_string(d) +
                           " for rank " + std::to_string(r) + "; it must be at least 0");
      }
      lim.max_deferred_w = d;
    }
    if (policy.microbatch_group) {
      const SourceLoc& loc = LocOr(policy.microbatch_group_loc, policy.loc);
      PW_ASSIGN_OR_RETURN(int64_t g, EvalFor(program, *policy.microbatch_group, loc, "microbatch group", vars));
      if (g < 1) {
        return ErrorAt(program, loc,
                       "the microbatch group '" + policy.microbatch_group->ToString() + "' is " + std::to_string(g) +
                           " for rank " + std::to_string(r) + "; a group holds at least 1 microbatch");
      }
      lim.group = g;
    }
    if (!program.memory_cap) continue;
    const MemoryCapSpec& cap = *program.memory_cap;
    if (cap.unit == MemoryCapSpec::Unit::kMicrobatches) {
      PW_ASSIGN_OR_RETURN(int64_t c, EvalFor(program, cap.microbatches, cap.loc, "memory cap", vars));
      // The cap admits whole microbatches (dsl/list_compiler.h): below one
      // no forward can ever start.
      if (c < 1) {
        return ErrorAt(program, cap.loc,
                       "the memory cap '" + cap.microbatches.ToString() + "' says rank " + std::to_string(r) +
                           " may hold " + std::to_string(c) + " microbatches, but a forward needs 1 (a rank reserves a "
                           "whole microbatch's activations when it starts the microbatch's first forward)",
                       StatusCode::kFailedPrecondition);
      }
      lim.cap = static_cast<double>(c);
    } else {
      double one = 0;
      for (StageId s : stages) one += costs.Stage(s).activation_bytes;
      if (!(cap.bytes >= one)) {
        return ErrorAt(program, cap.loc,
                       "the memory cap of " + FormatBytes(cap.bytes) + " is less than rank " + std::to_string(r) +
                           "'s activations of one microbatch (" + FormatBytes(one) + "), so no order fits",
                       StatusCode::kFailedPrecondition);
      }
      lim.cap = cap.bytes;
    }
  }
  plan.cap_in_bytes = program.memory_cap && program.memory_cap->unit == MemoryCapSpec::Unit::kBytes;
  return Status::Ok();
}

Status CheckPinned(const PipeProgram& program, bool split, const Schedule& schedule,
                   const std::vector<ActionKind>& user_kinds, const CompilePlan& plan,
                   std::vector<const PinnedSequence*>& pinned) {
  const int p = schedule.num_ranks(), S = schedule.num_stages(), m = schedule.num_microbatches;
  const int num_slots = kFirstUserSlot + static_cast<int>(user_kinds.size());
  pinned.assign(p, nullptr);
  std::vector<char> seen;
  for (const auto& [rank, seq] : program.pinned) {
    if (rank < 0 || rank >= p) {
      return ErrorAt(program, seq.loc,
                     "actions are pinned for rank " + std::to_string(rank) + ", but the pipeline has " +
                         std::to_string(p) + " ranks (0.." + std::to_string(p - 1) + ")");
    }
    const std::string whose = "rank " + std::to_string(rank) + "'s pinned action ";
    seen.assign(static_cast<size_t>(S) * m * num_slots, 0);
    size_t count = 0;
    for (size_t i = 0; i < seq.actions.size(); ++i) {
      const Action& a = seq.actions[i];
      const std::string at = whose + std::to_string(i + 1);
      const SourceLoc& loc = i < seq.action_locs.size() ? LocOr(seq.action_locs[i], seq.loc) : seq.loc;
      if (!schedule.kinds.Contains(a.kind)) {
        return ErrorAt(program, loc,
                       at + " has an undeclared kind (#" + std::to_string(static_cast<int>(a.kind)) + ")");
      }
      const std::string kind_name(schedule.kinds.Name(a.kind));
      const int slot = SlotOf(a.kind, split, user_kinds);
      if (slot < 0) {
        std::string why = a.kind == ActionKind::kBackward ? "the program splits the backward; pin I and W instead"
                          : IsSplitKind(a.kind) ? "the program does not split the backward; pin B instead"
                                                : "the compiler emits only F, B or I/W and declared kinds (lowering "
                                                  "adds communication and optimizer actions)";
        return ErrorAt(program, loc, at + " is a " + kind_name + ": " + why);
      }
      if (a.stage < 0 || a.stage >= S || a.microbatch < 0 || a.microbatch >= m) {
        return ErrorAt(program, loc,
                       at + " (" + kind_name + " on stage " + std::to_string(a.stage) + ", microbatch " +
                           std::to_string(a.microbatch) + ") is out of range: the pipeline has " + std::to_string(S) +
                           " stages and " + std::to_string(m) + " microbatches");
      }
      const std::string name = schedule.ActionName(a);
      const RankId owner = schedule.placement.RankOf(a.stage);
      if (owner != rank) {
        return ErrorAt(program, loc,
                       at + ", " + name + ", runs stage " + std::to_string(a.stage) +
                           ", which the placement puts on rank " + std::to_string(owner) + "; pin it for rank " +
                           std::to_string(owner) + " or change the placement",
                       StatusCode::kFailedPrecondition);
      }
      if (slot >= kFirstUserSlot && !plan.user_slots[slot - kFirstUserSlot].on_stage[a.stage]) {
        return ErrorAt(program, loc,
                       at + ", " + name + ": kind " + kind_name + " is not declared for stage " +
                           std::to_string(a.stage));
      }
      char& mark = seen[(static_cast<size_t>(a.microbatch) * S + a.stage) * num_slots + slot];
      if (mark) return ErrorAt(program, loc, at + ", " + name + ", is pinned twice");
      mark = 1;
      ++count;
    }
    if (!seq.prefix_only) {
      // A full program must hold every action of the rank.
      std::vector<std::string> missing;
      size_t num_missing = 0;
      for (StageId s : schedule.placement.StagesOf(rank)) {
        for (int mb = 0; mb < m; ++mb) {
          for (int slot = 0; slot < num_slots; ++slot) {
            if (slot == kSlotW && !split) continue;
            if (slot >= kFirstUserSlot && !plan.user_slots[slot - kFirstUserSlot].on_stage[s]) continue;
            if (seen[(static_cast<size_t>(mb) * S + s) * num_slots + slot]) continue;
            ActionKind k = slot == kSlotF ? ActionKind::kForward
                           : slot == kSlotBackward ? (split ? ActionKind::kBackwardInput : ActionKind::kBackward)
                           : slot == kSlotW ? ActionKind::kBackwardWeight
                                            : user_kinds[slot - kFirstUserSlot];
            if (++num_missing <= 4) missing.push_back(schedule.ActionName(Action{s, mb, k}));
          }
        }
      }
      if (num_missing > 0) {
        std::string list;
        for (const auto& n : missing) list += (list.empty() ? "" : ", ") + n;
        if (num_missing > missing.size()) list += " and " + std::to_string(num_missing - missing.size()) + " more";
        return ErrorAt(program, seq.loc,
                       "rank " + std::to_string(rank) + "'s pinned program lacks " + list +
                           "; pin every action of the rank, or mark the sequence as a prefix",
                       StatusCode::kFailedPrecondition);
      }
    }
    pinned[rank] = &seq;
  }
  return Status::Ok();
}

}  // namespace

Result<Schedule> CompilePipeProgram(const PipeProgram& program, const CompileOptions& options) {
  const int p = options.ranks > 0 ? options.ranks : program.ranks;
  const int m = options.microbatches > 0 ? options.microbatches : program.microbatches;
  if (p < 1 || m < 1) {
    return ErrorAt(program, {}, "a pipeline needs at least 1 rank and 1 microbatch, got " + std::to_string(p) +
                                    " ranks and " + std::to_string(m) + " microbatches");
  }
  PW_ASSIGN_OR_RETURN(Placement placement, BuildPlacement(program, p));
  const bool split = program.split_backward;
  Schedule schedule = MakeEmptySchedule(program.name, std::move(placement), m);

  CompilePlan plan;
  plan.num_microbatches = m;
  plan.split_backward = split;
  plan.traversal = program.policy.traversal;
  plan.source = program.source_name.empty() ? "<" + program.name + ">" : program.source_name;
  std::vector<ActionKind> user_kinds;
  PW_RETURN_IF_ERROR(DeclareKinds(program, split, schedule, plan, user_kinds));
  const long long cells = static_cast<long long>(schedule.num_stages()) * m;
  const long long per_cell = 3 + static_cast<long long>(user_kinds.size());
  if (cells * per_cell > kMaxGeneratedActions) {
    return ErrorAt(program, {},
                   std::to_string(schedule.num_stages()) + " stages x " + std::to_string(m) +
                       " microbatches is too large to compile; use fewer microbatches");
  }
  PW_RETURN_IF_ERROR(RankKinds(program, split, schedule, user_kinds, plan));

  CostModel costs = options.costs;
  if (Status st = costs.Resolve(schedule); !st.ok()) {
    return Status(st.code(), Where(program, {}) + "compile costs: " + st.message())
        .WithReason(StatusReason::kCostsDoNotFit);
  }
  PW_RETURN_IF_ERROR(EvaluateLimits(program, split, schedule, costs, plan));
  PW_RETURN_IF_ERROR(CheckPinned(program, split, schedule, user_kinds, plan, plan.pinned));
  PW_RETURN_IF_ERROR(internal::RunListCompiler(plan, costs, schedule));
  return schedule;
}

}  // namespace pw::dsl
