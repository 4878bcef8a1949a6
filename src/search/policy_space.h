// The order policies the planner tries within a family: the knobs of a
// .pipe program's `policy` and `memory` sections (dsl/pipe_program.h),
// each with a short list of values, and one point per combination.
//
//   prefix     none, or the warm-up of a built-in on this placement (below)
//   priority   fused: B>F, F>B; split: I>F>W, I>W>F, F>I>W
//   traversal  depth-first; breadth-first, and breadth-first in groups of p
//              (Megatron's order), when a rank owns more than one stage
//   warm-up    unset, p-r-1, 2(p-r)-1, v(p-r)-1, (v-1)p+2(p-r-1), 2p-r-1, vp-1,
//              and "as many as the prefix" (per-rank integers)
//   defer W    split only: unset, 0, r, p-r-1, p-1
//   memory     the user's cap (bytes; or microbatches per rank when memory
//              counts microbatch shares or static memory differs by rank),
//              plus tighter caps of p, 3p/4, p/2 and p/4 microbatch shares
//              for the memory end of the Pareto front
//
// Expressions that evaluate to the same per-rank values for this shape are
// listed once (for sequential placements v(p-r)-1 is p-r-1), so the space
// holds no two programs that compile alike for that reason.
//
// Pure functions; safe to call concurrently.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "dsl/pipe_program.h"
#include "search/family.h"

namespace pw::search {

struct MemoryOption {
  std::optional<dsl::MemoryCapSpec> spec;  // none: no cap beyond warm-up
  std::string label;                       // "cap", "p shares", ...
};

// The warm-up of a built-in generator on the family's placement, pinned as
// a prefix: each rank's leading forwards in the generator's order. The
// language's policies pick forwards greedily (lowest microbatch first), so
// on interleaved and V-shape placements they can spend the warm-up on the
// first stage and deadlock; a pinned warm-up in Megatron's or ZB-V's order
// avoids that, and the policy then runs the steady state with real costs.
struct WarmupPrefix {
  std::string label;                     // the generator, e.g. "zb-v"; "" = no prefix
  std::vector<std::vector<Action>> actions;  // per rank
  std::vector<int64_t> forwards;         // per rank: actions[r].size()
};

// The warm-up axis value that means "as many forwards as the prefix holds".
inline constexpr const char* kPrefixWarmup = "@prefix";

struct TraversalOption {
  dsl::Traversal traversal = dsl::Traversal::kDepthFirst;
  std::string group;  // breadth-first microbatch group expression; "" = all m
};

struct PolicyAxes {
  std::vector<WarmupPrefix> prefixes;    // [0] is "no prefix"
  std::vector<std::vector<ActionKind>> priorities;
  std::vector<TraversalOption> traversals;
  std::vector<std::string> warmups;    // expression text; "" = unset
  std::vector<std::string> deferrals;  // expression text; "" = unset
  std::vector<MemoryOption> memories;
  size_t Size() const {
    return prefixes.size() * priorities.size() * traversals.size() * warmups.size() * deferrals.size() *
           memories.size();
  }
};

// Indices into PolicyAxes, one per knob.
struct PolicyPoint {
  int prefix = 0, priority = 0, traversal = 0, warmup = 0, deferral = 0, memory = 0;
  friend auto operator<=>(const PolicyPoint&, const PolicyPoint&) = default;
};

// The knobs of a policy, one axis each, in the order the planner numbers
// them (its seeded sweep order is drawn over these numbers); memory last.
enum class PolicyAxis { kWarmup, kDeferral, kPriority, kTraversal, kPrefix, kMemory };
inline constexpr int kNumPolicyAxes = static_cast<int>(PolicyAxis::kMemory) + 1;

// The point's index on `axis` (writable), and how many values the axes
// offer on it. Pure.
int& AxisIndex(PolicyPoint& point, PolicyAxis axis);
int AxisSize(const PolicyAxes& axes, PolicyAxis axis);

// What the memory axis must respect: the per-rank cap and static bytes.
struct MemoryLimits {
  std::optional<double> cap;             // bytes per rank (static included)
  std::vector<double> static_bytes;      // one per rank
  // Memory counts microbatch shares (no activation bytes were given) and
  // every stage of a rank holds the same share: the user's cap is then
  // written as "<k> microbatches", which reads without the cost table.
  bool in_shares = false;
};

// The axes for `family` with p ranks and m microbatches. When the cap
// leaves some rank no room for one microbatch the memory axis is empty
// (no policy can fit).
PolicyAxes AxesFor(const Family& family, int num_microbatches, const MemoryLimits& limits);

// Points worth trying first: the policies behind 1F1B, ZB-H1/H2-like and
// Megatron-like orders on this placement (those the axes hold).
std::vector<PolicyPoint> StartPoints(const Family& family, const PolicyAxes& axes, int num_microbatches);

// False for points that mean nothing (a warm-up "as the prefix" without a
// prefix); the search skips them.
bool IsValid(const PolicyAxes& axes, const PolicyPoint& point);

// The .pipe program of `point`. Fails for an invalid point, or if an
// expression of the axes does not parse (a bug in the axes).
Result<dsl::PipeProgram> ProgramFor(const Family& family, const PolicyAxes& axes, const PolicyPoint& point,
                                    int num_microbatches, std::string name);

// The per-rank warm-up counts of `point` on the family's shape (the
// prefix's counts for "as the prefix"); nullopt when the warm-up is unset.
std::optional<std::vector<int64_t>> WarmupValues(const Family& family, const PolicyAxes& axes,
                                                 const PolicyPoint& point, int num_microbatches);

// The index of warm-up `text` in axes.warmups, appending it if new: the
// planner's per-rank refinement adds expressions as it goes.
int WarmupIndex(PolicyAxes& axes, const std::string& text);

// "I>F>W depth warmup=2*(p - r) - 1 deferW=r mem=cap".
std::string DescribePolicy(const PolicyAxes& axes, const PolicyPoint& point);

// A policy of the family's space (its start points, with and without the
// prefixes) that compiles to exactly `target` under the family's costs,
// named `name`; nullopt when none does. Used to write a winning built-in
// as a readable policy instead of pinned programs.
std::optional<dsl::PipeProgram> FindEquivalentPolicy(const Schedule& target, const Family& family,
                                                     const PolicyAxes& axes, int num_microbatches,
                                                     const std::string& name);

// An expression for per-rank integers: a*r + b when they fit one, else a
// sum of indicator terms v_i * max(0, 1 - |r - i|) written with min/max
// (the language has no lists). Empty `values` gives "0".
std::string PerRankExpression(const std::vector<int64_t>& values);

}  // namespace pw::search
