// FormatPipeProgram (dsl/parser.h): the canonical text of a PipeProgram,
// in the directive order of docs/schedule-language.md. ParsePipeProgram
// reads it back to the same program; values are printed so that they parse
// back exactly (shortest round-trip doubles, sizes in whole binary units or
// bytes, quoted names when a bare one would not survive).
#include <algorithm>
#include <charconv>
#include <cmath>

#include "dsl/lexer.h"
#include "dsl/parser.h"
#include "schedule/action_text.h"

namespace pw::dsl {
namespace {

std::string FormatDouble(double x) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), x);
  PW_CHECK(ec == std::errc(), "to_chars failed for a double");
  return std::string(buf, ptr);
}

// A byte count that ParseByteSize reads back exactly: whole KiB/MiB/GiB/TiB
// where the count is one (dividing by a power of two is exact), else bytes.
std::string FormatSize(double bytes) {
  static constexpr struct { const char* unit; double scale; } kUnits[] = {
      {"TiB", 1099511627776.0}, {"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"KiB", 1024.0}};
  for (const auto& u : kUnits) {
    const double n = bytes / u.scale;
    if (bytes > 0 && n >= 1 && n < 9007199254740992.0 && n == std::floor(n) && n * u.scale == bytes) {
      return FormatDouble(n) + u.unit;
    }
  }
  return FormatDouble(bytes) + "B";
}

// The text of one kind for the printer: its name, or a marker that the parser
// rejects when a hand-built program names a kind it never declared.
std::string KindName(const PipeProgram& p, ActionKind k) {
  const int id = static_cast<int>(k);
  if (id < kNumBuiltinKinds) return std::string(KindRegistry().Name(k));
  const size_t user = static_cast<size_t>(id - static_cast<int>(ActionKind::kFirstUser));
  if (id >= static_cast<int>(ActionKind::kFirstUser) && user < p.kinds.size()) return p.kinds[user].info.name;
  return "?" + std::to_string(id);
}

std::string JoinKinds(const PipeProgram& p, const std::vector<ActionKind>& list, std::string_view sep) {
  std::string out;
  for (ActionKind k : list) out += (out.empty() ? "" : std::string(sep)) + KindName(p, k);
  return out;
}

// The kind priority as the parser accepts it, meaning what the compiler makes
// of `p.policy.kind_priority` (dsl/compiler.cc RankKinds): B and I name the
// one backward slot, so each becomes the mode's kind and a repeat of the slot
// drops out; W has nothing to order without split backward; an empty list
// leaves the built-ins in the order F, backward, W. A program the parser
// produced is already in this form and prints unchanged.
std::vector<ActionKind> PrintablePriority(const PipeProgram& p) {
  const bool split = p.split_backward;
  const ActionKind backward = split ? ActionKind::kBackwardInput : ActionKind::kBackward;
  std::vector<ActionKind> out;
  for (ActionKind k : p.policy.kind_priority) {
    if (k == ActionKind::kBackward || k == ActionKind::kBackwardInput) k = backward;
    if (k == ActionKind::kBackwardWeight && !split) continue;
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  }
  if (out.empty()) {
    out = {ActionKind::kForward, backward};
    if (split) out.push_back(ActionKind::kBackwardWeight);
  }
  return out;
}

}  // namespace

std::string FormatPipeProgram(const PipeProgram& p) {
  std::string out = "schedule " + QuoteIfNeeded(p.name) + "\n";
  out += "ranks " + std::to_string(p.ranks) + "\n";
  out += "microbatches " + std::to_string(p.microbatches) + "\n";
  out += "placement ";
  switch (p.placement.style) {
    case PlacementStyle::kSequential: out += "sequential"; break;
    case PlacementStyle::kInterleaved: out += "interleaved " + std::to_string(p.placement.chunks); break;
    case PlacementStyle::kVShape: out += "vshape"; break;
    case PlacementStyle::kExplicit:
      out += "explicit";
      for (RankId r : p.placement.stage_to_rank) out += " " + std::to_string(r);
      break;
  }
  out += "\n";
  if (!p.layers_per_stage.empty()) {
    out += "layers";
    for (int n : p.layers_per_stage) out += " " + std::to_string(n);
    out += "\n";
  }
  if (!p.costs_file.empty()) out += "costs " + QuoteToken(p.costs_file) + "\n";
  out += p.split_backward ? "backward split\n" : "backward fused\n";
  if (p.memory_cap) {
    const MemoryCapSpec& m = *p.memory_cap;
    out += m.unit == MemoryCapSpec::Unit::kMicrobatches ? "memory " + m.microbatches.ToString() + " microbatches\n"
                                                        : "memory " + FormatSize(m.bytes) + "\n";
  }
  for (const KindDecl& k : p.kinds) {
    const KindInfo& info = k.info;
    // cost=0 is the default (and for RECOMPUTE means "the stage's F").
    out += "kind " + info.name;
    if (info.default_cost != 0) out += " cost=" + FormatDouble(info.default_cost);
    out += " memory=" + FormatDouble(info.memory_delta_fraction);
    if (!info.after.empty()) out += " after=" + JoinKinds(p, info.after, ",");
    if (!info.before.empty()) out += " before=" + JoinKinds(p, info.before, ",");
    if (!k.stages.empty()) {
      out += " stages=";
      for (size_t i = 0; i < k.stages.size(); ++i) out += (i ? "," : "") + std::to_string(k.stages[i]);
    }
    if (k.priority != 0) out += " priority=" + std::to_string(k.priority);
    if (!info.has_microbatch) out += " microbatch=no";
    out += "\n";
  }
  const OrderPolicy& policy = p.policy;
  out += "priority " + JoinKinds(p, PrintablePriority(p), " > ") + "\n";
  if (policy.traversal == Traversal::kDepthFirst) {
    out += "traversal depth-first\n";
  } else {
    out += "traversal breadth-first";
    if (policy.microbatch_group) out += " group " + policy.microbatch_group->ToString();
    out += "\n";
  }
  if (policy.warmup) out += "warmup " + policy.warmup->ToString() + "\n";
  if (policy.max_deferred_w) out += "defer W max " + policy.max_deferred_w->ToString() + "\n";
  if (!p.pinned.empty()) {
    // Pinned actions may name declared kinds; a program whose kinds do not
    // register (hand-built, invalid) still prints, with KindName's markers.
    KindRegistry kinds;
    bool kinds_ok = true;
    for (const KindDecl& k : p.kinds) kinds_ok = kinds_ok && kinds.Register(k.info).ok();
    for (const auto& [rank, seq] : p.pinned) {
      out += "rank " + std::to_string(rank) + (seq.prefix_only ? " prefix:" : ":");
      for (const Action& a : seq.actions) {
        if (kinds_ok && kinds.Contains(a.kind) && a.kind != ActionKind::kIdle) {
          out += " " + FormatAction(a, kinds);
        } else {
          out += " " + std::to_string(a.stage) + KindName(p, a.kind) + std::to_string(a.microbatch);
        }
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace pw::dsl
