// PipeProgram: a parsed `.pipe` file — the schedule language's data model.
//
// A .pipe program declares a pipeline's shape and an order *policy*; the
// compiler (dsl/compiler.h) turns it into per-rank programs (a Schedule) with
// an actor-style list scheduler: each rank, when free, runs its
// highest-priority ready action that its memory cap allows. Parts of the
// schedule can instead be pinned as explicit action sequences.
//
// The parser (dsl/parser.h) builds a PipeProgram from text and the printer
// writes it back; the planner (search/) builds PipeProgram values directly
// and writes the winner as a file. Every field has a default, so a program
// need only say what differs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ids.h"
#include "dsl/expr.h"
#include "schedule/action.h"
#include "schedule/kind_registry.h"

namespace pw::dsl {

// Where a construct came from, for error messages ("file.pipe:12:5").
struct SourceLoc {
  int line = 0;    // 1-based; 0 = not from a file
  int column = 0;  // 1-based
};

enum class PlacementStyle {
  kSequential,   // p stages, stage r on rank r
  kInterleaved,  // v*p stages, stage s on rank s % p
  kVShape,       // 2p stages, rank r owns r and 2p-1-r
  kExplicit,     // stage_to_rank as given
};

struct PlacementSpec {
  PlacementStyle style = PlacementStyle::kSequential;
  int chunks = 2;                      // kInterleaved: stages per rank (v)
  std::vector<RankId> stage_to_rank;   // kExplicit
  SourceLoc loc;
};

// Which microbatch/stage a rank prefers among ready actions of equal kind
// priority.
enum class Traversal {
  kDepthFirst,    // finish a microbatch's stages first: lowest microbatch, then
                  // forwards on the later stage / backwards on the earlier one
  kBreadthFirst,  // all microbatches of a stage first: earliest stage (F) or
                  // latest stage (B/I/W), then lowest microbatch
};

// The memory a rank may hold in activations; the compiler never starts an
// F that would exceed it (nor a user kind that adds memory).
struct MemoryCapSpec {
  enum class Unit { kMicrobatches, kBytes };
  Unit unit = Unit::kMicrobatches;
  // kMicrobatches: activations of this many microbatches of one *rank's*
  // share of the model (a stage on a rank with v stages holds 1/v of that);
  // per rank, may use r.
  Expr microbatches;
  double bytes = 0;                    // kBytes: compared with the cost model's activation bytes
  SourceLoc loc;
};

struct OrderPolicy {
  // Computation-type priority, highest first, e.g. {B, F} ("B > F") or
  // {I, F, W} ("I > F > W"); kinds not listed come last in declaration order.
  std::vector<ActionKind> kind_priority = {ActionKind::kBackward, ActionKind::kForward};
  Traversal traversal = Traversal::kDepthFirst;
  // Warm-up forwards, counted as the published schedules count them (1F1B:
  // "p - r - 1", Megatron's interleaved: "(v - 1)*p + 2*(p - r - 1)"): rank r
  // starts a forward only while at most warmup(r) of its forwards wait for
  // their backward (B or I) to start, so warmup(r) + 1 forwards precede its
  // first backward and then forwards and backwards alternate. Unset: no limit
  // beyond the memory cap. (docs/schedule-language.md, "Semantics".)
  std::optional<Expr> warmup;
  // Split backward only: how many W a rank may leave pending before W takes
  // the highest priority (e.g. "r" as in ZB-H1); unset: W follows kind_priority.
  std::optional<Expr> max_deferred_w;
  // Breadth-first only: microbatches are traversed in groups of this many,
  // group after group, each group breadth-first (Megatron's interleaved 1F1B
  // is breadth-first in groups of p); unset: one group of all m. Must be >= 1;
  // no effect on depth-first.
  std::optional<Expr> microbatch_group;
  SourceLoc loc;                 // the `priority` line (else the first policy line)
  SourceLoc warmup_loc;          // the `warmup` expression, when parsed
  SourceLoc max_deferred_w_loc;  // the `defer W max` expression, when parsed
  SourceLoc microbatch_group_loc;  // the group expression, when parsed
};

// A user-declared kind: the registry entry plus where the compiler puts its
// actions: one per (stage, microbatch) for the stages listed (all if empty),
// ordered by its `after` / `before` rule and its priority.
struct KindDecl {
  KindInfo info;
  std::vector<StageId> stages;         // empty: every stage
  int priority = 0;                    // higher runs earlier among ready actions
  SourceLoc loc;
};

// Explicit actions for one rank: the whole program, or a prefix after which
// the policy takes over.
struct PinnedSequence {
  std::vector<Action> actions;
  bool prefix_only = false;            // "rank 0 prefix: ..."
  SourceLoc loc;
  // Where each action was written, parallel to `actions` when parsed from
  // text; empty for sequences built in code.
  std::vector<SourceLoc> action_locs;
};

struct PipeProgram {
  std::string name = "custom";
  // Defaults for the shape; the CLI and the planner may override them.
  int ranks = 4;
  int microbatches = 8;
  PlacementSpec placement;
  // Model blocks per virtual stage, in stage order (`layers 1 2 1`): the
  // layer split the program was planned for, which `train` uses. Empty:
  // the program says nothing about the split. Not used by the compiler;
  // LoadScheduleWithLayers (dsl/schedule_source.h) checks its length
  // against the schedule's stages, the trainer its sum against the model.
  std::vector<int> layers_per_stage;
  SourceLoc layers_loc;                // the `layers` line, when parsed
  // The cost-model JSON the program was planned with (`costs best.costs.json`),
  // as written: a relative path is relative to the .pipe file's directory.
  // A policy's order follows the costs it is list-scheduled with, so loading
  // the file (dsl/schedule_source.h) compiles the planned order; costs given
  // by the caller take precedence. Empty: the program names none.
  std::string costs_file;
  SourceLoc costs_loc;                 // the `costs` line, when parsed
  bool split_backward = false;         // emit I and W instead of B
  std::optional<MemoryCapSpec> memory_cap;
  OrderPolicy policy;
  std::vector<KindDecl> kinds;
  std::map<RankId, PinnedSequence> pinned;
  std::string source_name;             // file path, for messages
};

// The kind priority a program gets when it names none: B > F, or with split
// backward its analogue I > W > F (1F1B with each B cut in two). The parser
// uses it when `backward split` comes without a `priority` line.
std::vector<ActionKind> DefaultKindPriority(bool split_backward);

// "" when `a` and `b` mean the same program, else the first difference, e.g.
// "policy.warmup: 'p - r' vs 'p - r - 1'". Compares every field except
// source locations and source_name; expressions compare by their canonical
// text (Expr::ToString); placement.chunks only for interleaved,
// stage_to_rank only for explicit placements, and policy.microbatch_group
// only for breadth-first traversal. Pure.
std::string DescribeProgramDifference(const PipeProgram& a, const PipeProgram& b);

}  // namespace pw::dsl
