#include "dsl/pipe_program.h"

#include <sstream>

namespace pw::dsl {
namespace {

std::string KindIds(const std::vector<ActionKind>& kinds) {
  std::string out;
  for (ActionKind k : kinds) out += (out.empty() ? "" : ",") + std::to_string(static_cast<int>(k));
  return "[" + out + "]";
}

std::string JoinInts(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : " ") + std::to_string(x);
  return "[" + out + "]";
}

template <typename T>
std::string Show(const T& x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

std::string Show(const std::optional<Expr>& e) { return e ? "'" + e->ToString() + "'" : "unset"; }

std::string Differ(const std::string& field, const std::string& a, const std::string& b) {
  return field + ": " + a + " vs " + b;
}

std::string DiffKind(const KindDecl& a, const KindDecl& b, const std::string& at) {
  const KindInfo& x = a.info;
  const KindInfo& y = b.info;
  if (x.name != y.name) return Differ(at + ".name", x.name, y.name);
  if (x.has_microbatch != y.has_microbatch) return Differ(at + ".has_microbatch", Show(x.has_microbatch), Show(y.has_microbatch));
  if (x.default_cost != y.default_cost) return Differ(at + ".default_cost", Show(x.default_cost), Show(y.default_cost));
  if (x.memory_delta_fraction != y.memory_delta_fraction) {
    return Differ(at + ".memory_delta_fraction", Show(x.memory_delta_fraction), Show(y.memory_delta_fraction));
  }
  if (x.after != y.after) return Differ(at + ".after", KindIds(x.after), KindIds(y.after));
  if (x.before != y.before) return Differ(at + ".before", KindIds(x.before), KindIds(y.before));
  if (a.stages != b.stages) return at + ".stages differ";
  if (a.priority != b.priority) return Differ(at + ".priority", Show(a.priority), Show(b.priority));
  return "";
}

}  // namespace

std::vector<ActionKind> DefaultKindPriority(bool split_backward) {
  if (split_backward) return {ActionKind::kBackwardInput, ActionKind::kBackwardWeight, ActionKind::kForward};
  return {ActionKind::kBackward, ActionKind::kForward};
}

std::string DescribeProgramDifference(const PipeProgram& a, const PipeProgram& b) {
  if (a.name != b.name) return Differ("name", "'" + a.name + "'", "'" + b.name + "'");
  if (a.ranks != b.ranks) return Differ("ranks", Show(a.ranks), Show(b.ranks));
  if (a.microbatches != b.microbatches) return Differ("microbatches", Show(a.microbatches), Show(b.microbatches));
  const PlacementSpec& pa = a.placement;
  const PlacementSpec& pb = b.placement;
  if (pa.style != pb.style) {
    return Differ("placement.style", Show(static_cast<int>(pa.style)), Show(static_cast<int>(pb.style)));
  }
  if (pa.style == PlacementStyle::kInterleaved && pa.chunks != pb.chunks) {
    return Differ("placement.chunks", Show(pa.chunks), Show(pb.chunks));
  }
  if (pa.style == PlacementStyle::kExplicit && pa.stage_to_rank != pb.stage_to_rank) {
    return "placement.stage_to_rank differs";
  }
  if (a.layers_per_stage != b.layers_per_stage) {
    return Differ("layers_per_stage", JoinInts(a.layers_per_stage), JoinInts(b.layers_per_stage));
  }
  if (a.costs_file != b.costs_file) return Differ("costs_file", a.costs_file, b.costs_file);
  if (a.split_backward != b.split_backward) return Differ("split_backward", Show(a.split_backward), Show(b.split_backward));
  if (a.memory_cap.has_value() != b.memory_cap.has_value()) {
    return Differ("memory_cap", a.memory_cap ? "set" : "unset", b.memory_cap ? "set" : "unset");
  }
  if (a.memory_cap) {
    const MemoryCapSpec& ma = *a.memory_cap;
    const MemoryCapSpec& mb = *b.memory_cap;
    if (ma.unit != mb.unit) return Differ("memory_cap.unit", Show(static_cast<int>(ma.unit)), Show(static_cast<int>(mb.unit)));
    if (ma.unit == MemoryCapSpec::Unit::kMicrobatches && ma.microbatches.ToString() != mb.microbatches.ToString()) {
      return Differ("memory_cap.microbatches", ma.microbatches.ToString(), mb.microbatches.ToString());
    }
    if (ma.unit == MemoryCapSpec::Unit::kBytes && ma.bytes != mb.bytes) {
      return Differ("memory_cap.bytes", Show(ma.bytes), Show(mb.bytes));
    }
  }
  const OrderPolicy& oa = a.policy;
  const OrderPolicy& ob = b.policy;
  if (oa.kind_priority != ob.kind_priority) {
    return Differ("policy.kind_priority", KindIds(oa.kind_priority), KindIds(ob.kind_priority));
  }
  if (oa.traversal != ob.traversal) {
    return Differ("policy.traversal", Show(static_cast<int>(oa.traversal)), Show(static_cast<int>(ob.traversal)));
  }
  if (Show(oa.warmup) != Show(ob.warmup)) return Differ("policy.warmup", Show(oa.warmup), Show(ob.warmup));
  if (Show(oa.max_deferred_w) != Show(ob.max_deferred_w)) {
    return Differ("policy.max_deferred_w", Show(oa.max_deferred_w), Show(ob.max_deferred_w));
  }
  if (oa.traversal == Traversal::kBreadthFirst && Show(oa.microbatch_group) != Show(ob.microbatch_group)) {
    return Differ("policy.microbatch_group", Show(oa.microbatch_group), Show(ob.microbatch_group));
  }
  if (a.kinds.size() != b.kinds.size()) return Differ("kinds.size", Show(a.kinds.size()), Show(b.kinds.size()));
  for (size_t i = 0; i < a.kinds.size(); ++i) {
    std::string d = DiffKind(a.kinds[i], b.kinds[i], "kinds[" + std::to_string(i) + "]");
    if (!d.empty()) return d;
  }
  if (a.pinned.size() != b.pinned.size()) return Differ("pinned.size", Show(a.pinned.size()), Show(b.pinned.size()));
  for (auto ia = a.pinned.begin(), ib = b.pinned.begin(); ia != a.pinned.end(); ++ia, ++ib) {
    if (ia->first != ib->first) return Differ("pinned rank", Show(ia->first), Show(ib->first));
    const std::string at = "pinned[" + std::to_string(ia->first) + "]";
    if (ia->second.prefix_only != ib->second.prefix_only) return at + ".prefix_only differs";
    if (ia->second.actions != ib->second.actions) return at + ".actions differ";
  }
  return "";
}

}  // namespace pw::dsl
