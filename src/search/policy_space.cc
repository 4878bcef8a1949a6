#include "search/policy_space.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>

#include "core/check.h"
#include "dsl/compiler.h"
#include "schedule/generators.h"
#include "search/builtin_seeds.h"

namespace pw::search {
namespace {

using dsl::Expr;
using dsl::ExprVars;

constexpr ActionKind kF = ActionKind::kForward;
constexpr ActionKind kB = ActionKind::kBackward;
constexpr ActionKind kI = ActionKind::kBackwardInput;
constexpr ActionKind kW = ActionKind::kBackwardWeight;

// The canonical warm-up of each placement: what 1F1B, Megatron's
// interleaving and ZB-V run (the start points use them).
constexpr const char* kSequentialWarmup = "p - r - 1";
constexpr const char* kInterleavedWarmup = "(v - 1)*p + 2*(p - r - 1)";
constexpr const char* kVShapeWarmup = "2*p - r - 1";
constexpr const char* kZbH2Warmup = "2*(p - r) - 1";

// Per-rank values of `text` on `family`'s shape, saturated at `limit_r`
// (a count at or above the rank's forwards means "no limit"). Unset: all
// saturated.
std::vector<int64_t> Profile(const std::string& text, const Family& family, int m) {
  const int p = family.placement.num_ranks();
  std::vector<int64_t> out(p);
  if (text == kPrefixWarmup) return std::vector<int64_t>(p, -3);  // not an expression: never a duplicate
  std::optional<Expr> e;
  if (!text.empty()) e = *Expr::Parse(text);
  for (RankId r = 0; r < p; ++r) {
    const int64_t v = static_cast<int64_t>(family.placement.StagesOf(r).size());
    const int64_t limit = v * m;
    int64_t value = limit;
    if (e) {
      Result<int64_t> x = e->Evaluate(ExprVars{.p = p, .r = r, .m = m, .v = v, .S = family.num_stages()});
      value = x.ok() ? std::clamp<int64_t>(*x, -1, limit) : -2;
    }
    out[r] = value;
  }
  return out;
}

// Keeps the first of the expressions that agree rank by rank. Negative
// values (a warm-up below zero is an error) drop the expression.
std::vector<std::string> Dedupe(const std::vector<std::string>& texts, const Family& family, int m) {
  std::vector<std::string> kept;
  std::vector<std::vector<int64_t>> seen;
  for (const std::string& t : texts) {
    std::vector<int64_t> values = Profile(t, family, m);
    if (t != kPrefixWarmup && std::any_of(values.begin(), values.end(), [](int64_t x) { return x < 0; })) continue;
    auto it = std::find(seen.begin(), seen.end(), values);
    if (it != seen.end()) continue;
    kept.push_back(t);
    seen.push_back(std::move(values));
  }
  return kept;
}

std::string PriorityText(const std::vector<ActionKind>& kinds) {
  std::string out;
  for (ActionKind k : kinds) {
    if (!out.empty()) out += ">";
    out += k == kF ? "F" : k == kB ? "B" : k == kI ? "I" : "W";
  }
  return out;
}

dsl::MemoryCapSpec Shares(const std::string& text) {
  dsl::MemoryCapSpec spec;
  spec.unit = dsl::MemoryCapSpec::Unit::kMicrobatches;
  spec.microbatches = *Expr::Parse(text);
  return spec;
}

std::vector<MemoryOption> MemoryOptions(const Family& family, const MemoryLimits& limits) {
  const int p = family.placement.num_ranks();
  // A rank's share of one microbatch, in bytes.
  std::vector<double> share(p, 0.0);
  for (RankId r = 0; r < p; ++r) {
    for (StageId s : family.placement.StagesOf(r)) share[r] += family.costs.Stage(s).activation_bytes;
  }
  auto static_of = [&](RankId r) {
    return limits.static_bytes.empty() ? 0.0 : limits.static_bytes[limits.static_bytes.size() == 1 ? 0 : r];
  };
  std::vector<MemoryOption> out;
  // Most microbatch shares each rank may hold under the cap (none: no cap).
  std::vector<int64_t> room(p, std::numeric_limits<int64_t>::max());
  if (limits.cap) {
    double min_headroom = std::numeric_limits<double>::infinity();
    bool uniform_static = true;
    for (RankId r = 0; r < p; ++r) {
      const double headroom = *limits.cap - static_of(r);
      min_headroom = std::min(min_headroom, headroom);
      uniform_static &= static_of(r) == static_of(0);
      room[r] = share[r] > 0 ? static_cast<int64_t>(std::floor(headroom / share[r] * (1 + 1e-12))) : room[r];
      if (headroom < 0) return {};
    }
    if (limits.in_shares || !uniform_static) {
      if (*std::min_element(room.begin(), room.end()) < 1) return {};
      out.push_back({Shares(PerRankExpression(room)), uniform_static ? "cap" : "cap per rank"});
    }
    if (!limits.in_shares) {
      dsl::MemoryCapSpec bytes;
      bytes.unit = dsl::MemoryCapSpec::Unit::kBytes;
      bytes.bytes = min_headroom;
      out.push_back({bytes, uniform_static ? "cap" : "cap (tightest rank)"});
    }
  } else {
    out.push_back({std::nullopt, "none"});
  }
  // Tighter caps in shares, for the lean end of the front.
  for (int64_t k : {static_cast<int64_t>(p), static_cast<int64_t>((3 * p + 3) / 4), static_cast<int64_t>((p + 1) / 2),
                    static_cast<int64_t>((p + 3) / 4)}) {
    if (k < 1) continue;
    const bool tighter = std::any_of(room.begin(), room.end(), [&](int64_t x) { return x > k; });
    const bool fits = std::all_of(room.begin(), room.end(), [&](int64_t x) { return x >= k; });
    const bool new_level = std::none_of(out.begin(), out.end(), [&](const MemoryOption& o) {
      return o.label == std::to_string(k) + " shares";
    });
    if (tighter && fits && new_level) out.push_back({Shares(std::to_string(k)), std::to_string(k) + " shares"});
  }
  return out;
}

// The warm-ups of the built-ins whose placement is the family's, distinct.
std::vector<WarmupPrefix> Prefixes(const Family& family, int m) {
  std::vector<WarmupPrefix> out = {WarmupPrefix{}};
  const int p = family.placement.num_ranks();
  for (const BuiltinSeed& seed : BuiltinSeeds(family.chunks())) {
    Result<Schedule> s = GenerateSchedule(seed.family, GeneratorOptions{p, m, seed.chunks});
    if (!s.ok() || !(s->placement == family.placement)) continue;
    WarmupPrefix prefix;
    prefix.label = seed.family;
    for (RankId r = 0; r < p; ++r) {
      std::vector<Action> lead;
      for (const Action& a : s->programs[r]) {
        if (a.kind != ActionKind::kForward) break;
        lead.push_back(a);
      }
      prefix.forwards.push_back(static_cast<int64_t>(lead.size()));
      prefix.actions.push_back(std::move(lead));
    }
    const bool seen = std::any_of(out.begin(), out.end(), [&](const WarmupPrefix& o) { return o.actions == prefix.actions; });
    if (!seen) out.push_back(std::move(prefix));
  }
  return out;
}

}  // namespace

PolicyAxes AxesFor(const Family& family, int num_microbatches, const MemoryLimits& limits) {
  PolicyAxes axes;
  axes.prefixes = Prefixes(family, num_microbatches);
  const bool multi = family.num_stages() > family.placement.num_ranks();
  if (family.split_backward) {
    axes.priorities = {{kI, kF, kW}, {kI, kW, kF}, {kF, kI, kW}};
  } else {
    axes.priorities = {{kB, kF}, {kF, kB}};
  }
  axes.traversals = {{dsl::Traversal::kDepthFirst, ""}};
  if (multi) {
    axes.traversals.push_back({dsl::Traversal::kBreadthFirst, ""});
    if (family.placement.num_ranks() < num_microbatches) axes.traversals.push_back({dsl::Traversal::kBreadthFirst, "p"});
  }
  axes.warmups = Dedupe({"", kSequentialWarmup, kZbH2Warmup, "v*(p - r) - 1", kInterleavedWarmup, kVShapeWarmup,
                         "v*p - 1"},
                        family, num_microbatches);
  if (axes.prefixes.size() > 1) axes.warmups.push_back(kPrefixWarmup);
  axes.deferrals = {""};
  if (family.split_backward) axes.deferrals = Dedupe({"", "0", "r", "p - r - 1", "p - 1"}, family, num_microbatches);
  axes.memories = MemoryOptions(family, limits);
  return axes;
}

std::vector<PolicyPoint> StartPoints(const Family& family, const PolicyAxes& axes, int num_microbatches) {
  if (axes.memories.empty()) return {};
  // An expression's index is that of the kept one with the same values.
  auto find = [&](const std::vector<std::string>& kept, const std::string& text) {
    const std::vector<int64_t> want = Profile(text, family, num_microbatches);
    for (size_t i = 0; i < kept.size(); ++i) {
      if (Profile(kept[i], family, num_microbatches) == want) return static_cast<int>(i);
    }
    return -1;
  };
  const dsl::PlacementStyle style = family.placement_spec.style;
  const std::string canonical = style == dsl::PlacementStyle::kInterleaved ? kInterleavedWarmup
                                : style == dsl::PlacementStyle::kVShape    ? kVShapeWarmup
                                                                           : kSequentialWarmup;
  std::vector<PolicyPoint> out;
  auto add = [&](int priority, const std::string& w, const std::string& d, int prefix = 0, int traversal = 0) {
    PolicyPoint pt;
    pt.prefix = prefix;
    pt.traversal = traversal;
    pt.priority = priority;
    pt.warmup = w == kPrefixWarmup ? static_cast<int>(axes.warmups.size()) - 1 : find(axes.warmups, w);
    pt.deferral = find(axes.deferrals, d);
    if (pt.warmup < 0 || pt.deferral < 0) return;
    if (std::find(out.begin(), out.end(), pt) == out.end()) out.push_back(pt);
  };
  if (family.split_backward) {
    add(0, kZbH2Warmup, "");         // ZB-H2-like: I > F > W, W fills the gaps
    add(0, kSequentialWarmup, "r");  // ZB-H1-like
    add(0, canonical, "");
    add(1, canonical, "");           // 1F1B with each B cut in two
  } else {
    add(0, canonical, "");           // 1F1B / Megatron / V
    add(0, "", "");                  // B > F under the memory cap alone
  }
  // Megatron's order: forwards first, breadth-first in groups of p, with its
  // warm-up (docs/schedule-language.md); and looped BFS: breadth-first, no
  // warm-up limit.
  const int grouped = static_cast<int>(axes.traversals.size()) - 1;
  if (!axes.traversals[grouped].group.empty()) {
    const int forward_first = family.split_backward ? 2 : 1;
    add(forward_first, kInterleavedWarmup, "", 0, grouped);
    add(0, kInterleavedWarmup, "", 0, grouped);
    if (family.split_backward) add(forward_first, kInterleavedWarmup, "r", 0, grouped);
  }
  if (axes.traversals.size() > 1 && !family.split_backward) add(1, "", "", 0, 1);
  // Each built-in's warm-up, then the policy with the same number of
  // forwards in flight (split: W deferred freely, or at most r pending).
  for (int k = 1; k < static_cast<int>(axes.prefixes.size()); ++k) {
    add(0, kPrefixWarmup, "", k);
    if (family.split_backward) {
      add(0, kPrefixWarmup, "r", k);
      add(2, kPrefixWarmup, "r", k);
    }
  }
  return out;
}

std::optional<std::vector<int64_t>> WarmupValues(const Family& family, const PolicyAxes& axes,
                                                 const PolicyPoint& point, int num_microbatches) {
  const std::string& w = axes.warmups[point.warmup];
  if (w.empty()) return std::nullopt;
  if (w != kPrefixWarmup) return Profile(w, family, num_microbatches);
  std::vector<int64_t> counts;
  for (int64_t f : axes.prefixes[point.prefix].forwards) counts.push_back(std::max<int64_t>(0, f - 1));
  return counts;
}

int& AxisIndex(PolicyPoint& point, PolicyAxis axis) {
  switch (axis) {
    case PolicyAxis::kWarmup: return point.warmup;
    case PolicyAxis::kDeferral: return point.deferral;
    case PolicyAxis::kPriority: return point.priority;
    case PolicyAxis::kTraversal: return point.traversal;
    case PolicyAxis::kPrefix: return point.prefix;
    case PolicyAxis::kMemory: return point.memory;
  }
  PW_CHECK(false);
  return point.memory;
}

int AxisSize(const PolicyAxes& axes, PolicyAxis axis) {
  switch (axis) {
    case PolicyAxis::kWarmup: return static_cast<int>(axes.warmups.size());
    case PolicyAxis::kDeferral: return static_cast<int>(axes.deferrals.size());
    case PolicyAxis::kPriority: return static_cast<int>(axes.priorities.size());
    case PolicyAxis::kTraversal: return static_cast<int>(axes.traversals.size());
    case PolicyAxis::kPrefix: return static_cast<int>(axes.prefixes.size());
    case PolicyAxis::kMemory: return static_cast<int>(axes.memories.size());
  }
  PW_CHECK(false);
  return 0;
}

int WarmupIndex(PolicyAxes& axes, const std::string& text) {
  auto it = std::find(axes.warmups.begin(), axes.warmups.end(), text);
  if (it != axes.warmups.end()) return static_cast<int>(it - axes.warmups.begin());
  axes.warmups.push_back(text);
  return static_cast<int>(axes.warmups.size()) - 1;
}

bool IsValid(const PolicyAxes& axes, const PolicyPoint& point) {
  return point.prefix > 0 || axes.warmups[point.warmup] != kPrefixWarmup;
}

namespace {

// A pair of user kinds that takes each F's activations away right after it
// (`away`: memory -1, e.g. DROP or OFFLOAD) and brings them back just
// before the backward that needs them (`back`: memory +1, e.g. RECOMPUTE or
// RELOAD; schedule/kind_registry.h). Both go first among ready actions:
// neither waits on another rank. The cost model prices them (a RECOMPUTE is
// another F, OFFLOAD and RELOAD cross the host link).
void AddActivationKinds(dsl::PipeProgram& program, std::string_view away_name, std::string_view back_name) {
  dsl::KindDecl away;
  away.info.name = std::string(away_name);
  away.info.memory_delta_fraction = -1;
  away.info.after = {ActionKind::kForward};
  away.priority = 100;
  dsl::KindDecl back;
  back.info.name = std::string(back_name);
  back.info.memory_delta_fraction = 1;
  // The first declared kind gets the first user id.
  back.info.after = {ActionKind::kFirstUser};
  back.info.before = {program.split_backward ? ActionKind::kBackwardInput : ActionKind::kBackward};
  back.priority = 100;
  program.kinds.insert(program.kinds.begin(), {std::move(away), std::move(back)});
}

}  // namespace

Result<dsl::PipeProgram> ProgramFor(const Family& family, const PolicyAxes& axes, const PolicyPoint& point,
                                    int num_microbatches, std::string name) {
  if (!IsValid(axes, point)) return Status::InvalidArgument("a warm-up as long as the prefix needs a prefix");
  dsl::PipeProgram program;
  program.name = std::move(name);
  program.ranks = family.placement.num_ranks();
  program.microbatches = num_microbatches;
  program.placement = family.placement_spec;
  program.split_backward = family.split_backward;
  program.memory_cap = axes.memories[point.memory].spec;
  program.policy.kind_priority = axes.priorities[point.priority];
  if (family.recompute) AddActivationKinds(program, kDropKindName, kRecomputeKindName);
  if (family.offload) AddActivationKinds(program, kOffloadKindName, kReloadKindName);
  const TraversalOption& traversal = axes.traversals[point.traversal];
  program.policy.traversal = traversal.traversal;
  if (!traversal.group.empty()) {
    PW_ASSIGN_OR_RETURN(program.policy.microbatch_group, Expr::Parse(traversal.group));
  }
  const WarmupPrefix& prefix = axes.prefixes[point.prefix];
  for (size_t r = 0; r < prefix.actions.size(); ++r) {
    if (!prefix.actions[r].empty()) program.pinned[static_cast<RankId>(r)] = {prefix.actions[r], true, {}, {}};
  }
  if (const std::string& w = axes.warmups[point.warmup]; w == kPrefixWarmup) {
    // Warm-up counts forwards waiting besides the one about to run.
    std::vector<int64_t> counts;
    for (int64_t f : prefix.forwards) counts.push_back(std::max<int64_t>(0, f - 1));
    PW_ASSIGN_OR_RETURN(program.policy.warmup, Expr::Parse(PerRankExpression(counts)));
  } else if (!w.empty()) {
    PW_ASSIGN_OR_RETURN(program.policy.warmup, Expr::Parse(w));
  }
  if (const std::string& d = axes.deferrals[point.deferral]; !d.empty()) {
    PW_ASSIGN_OR_RETURN(program.policy.max_deferred_w, Expr::Parse(d));
  }
  return program;
}

std::string DescribePolicy(const PolicyAxes& axes, const PolicyPoint& point) {
  std::string out;
  if (point.prefix > 0) out += axes.prefixes[point.prefix].label + " warm-up, then ";
  out += PriorityText(axes.priorities[point.priority]);
  const TraversalOption& traversal = axes.traversals[point.traversal];
  out += traversal.traversal == dsl::Traversal::kDepthFirst ? " depth" : " breadth";
  if (!traversal.group.empty()) out += "(group " + traversal.group + ")";
  const std::string& w = axes.warmups[point.warmup];
  out += " warmup=" + (w.empty() ? std::string("-") : w == kPrefixWarmup ? std::string("as prefix") : w);
  if (axes.deferrals.size() > 1 || !axes.deferrals[0].empty()) {
    const std::string& d = axes.deferrals[point.deferral];
    out += " deferW=" + (d.empty() ? std::string("-") : d);
  }
  out += " mem=" + axes.memories[point.memory].label;
  return out;
}

std::optional<dsl::PipeProgram> FindEquivalentPolicy(const Schedule& target, const Family& family,
                                                     const PolicyAxes& axes, int num_microbatches,
                                                     const std::string& name) {
  if (axes.memories.empty()) return std::nullopt;
  dsl::CompileOptions options;
  options.ranks = family.placement.num_ranks();
  options.microbatches = num_microbatches;
  options.costs = family.costs;
  std::vector<PolicyPoint> points = StartPoints(family, axes, num_microbatches);
  // A plain policy reads best: try the ones without a prefix first.
  std::stable_partition(points.begin(), points.end(), [](const PolicyPoint& pt) { return pt.prefix == 0; });
  for (const PolicyPoint& pt : points) {
    for (int level = 0; level < static_cast<int>(axes.memories.size()); ++level) {
      PolicyPoint trial = pt;
      trial.memory = level;
      Result<dsl::PipeProgram> program = ProgramFor(family, axes, trial, num_microbatches, name);
      if (!program.ok()) continue;
      Result<Schedule> s = dsl::CompilePipeProgram(*program, options);
      if (s.ok() && s->programs == target.programs) return *program;
    }
  }
  return std::nullopt;
}

std::string PerRankExpression(const std::vector<int64_t>& values) {
  if (values.empty()) return "0";
  const int64_t b = values[0];
  const int64_t a = values.size() > 1 ? values[1] - values[0] : 0;
  bool linear = true;
  for (size_t i = 0; i < values.size(); ++i) linear &= values[i] == b + a * static_cast<int64_t>(i);
  if (linear) {
    if (a == 0) return std::to_string(b);
    std::string out = a == 1 ? "r" : a == -1 ? "-r" : std::to_string(a) + "*r";
    if (b > 0) out += " + " + std::to_string(b);
    if (b < 0) out += " - " + std::to_string(-b);
    return out;
  }
  // sum_i v_i * [r == i], with [r == i] = max(0, 1 - max(r - i, i - r)).
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] == 0) continue;
    const std::string idx = std::to_string(i);
    const int64_t magnitude = values[i] < 0 ? -values[i] : values[i];
    std::string term = "max(0, 1 - max(r - " + idx + ", " + idx + " - r))";
    if (magnitude != 1) term = std::to_string(magnitude) + "*" + term;
    if (out.empty()) {
      out = (values[i] < 0 ? "-" : "") + term;
    } else {
      out += (values[i] < 0 ? " - " : " + ") + term;
    }
  }
  return out.empty() ? "0" : out;
}

}  // namespace pw::search
