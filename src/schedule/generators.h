// Built-in schedule generators: GPipe, 1F1B, interleaved 1F1B, looped BFS,
// zero-bubble H1/H2, ZB-V and DualPipe-V, each a pure function of
// (ranks, microbatches, chunks) that returns a compute-only Schedule (F and B,
// or F, I and W; no communication, no idle steps) with its Placement set.
// Lowering passes add communication afterwards. docs/schedules.md describes
// every family: placement, constraints, memory and its published bound.
//
// Thread-safety: every function here is pure and may be called concurrently.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "schedule/schedule.h"

namespace pw {

struct GeneratorOptions {
  int num_ranks = 1;         // p, pipeline ranks, >= 1
  int num_microbatches = 1;  // m, >= 1
  int chunks = 0;            // stages (model chunks) per rank; 0 = the family's default
};

// Upper bound on the actions one generated schedule may hold (~3 GiB of IR);
// larger requests fail with InvalidArgument instead of exhausting memory.
inline constexpr long long kMaxGeneratedActions = 1LL << 28;

// One built-in family, for lookup and --help.
struct ScheduleFamily {
  std::string_view name;         // canonical name, e.g. "interleaved-1f1b"
  std::string_view description;  // one line, e.g. for `pipewright --help`
  int default_chunks;            // chunks per rank when GeneratorOptions::chunks == 0
  Result<Schedule> (*generate)(const GeneratorOptions&);
};

// Every built-in family in a stable order (gpipe, 1f1b, interleaved-1f1b,
// looped-bfs, zb-h1, zb-h2, zb-v, dualpipe-v). Static data; never fails.
std::span<const ScheduleFamily> BuiltinScheduleFamilies();

// The canonical names of BuiltinScheduleFamilies(), same order.
std::vector<std::string> BuiltinScheduleNames();
// The same names as one line, "gpipe, 1f1b, ..." (for messages and --help).
std::string BuiltinScheduleNameList();

// The family that GenerateSchedule(name, ...) generates, or null when `name`
// names none (the spellings below). Static data; never fails.
const ScheduleFamily* FindScheduleFamily(std::string_view name);

// FindScheduleFamily(name) != nullptr: whether `name` is a built-in family
// rather than, say, a schedule file. The one test every caller uses.
bool IsBuiltinScheduleFamily(std::string_view name);

// Generates the schedule of the named family. Names match case-insensitively
// and ignore '-' and '_' ("ZB-V", "zbv" and "zb_v" are the same); PyTorch's
// class names without "Schedule" also work ("Interleaved1F1B", "LoopedBFS",
// "ZBVZeroBubble", "DualPipeV"). Fails with NotFound listing the known names
// for an unknown family, and with the family's own error otherwise (below).
// The returned Schedule's name is the canonical family name.
Result<Schedule> GenerateSchedule(std::string_view family, const GeneratorOptions& options);

// The families one by one. Every one fails with InvalidArgument when ranks or
// microbatches are < 1, when chunks is not one the family supports, or when
// the schedule would exceed kMaxGeneratedActions; messages name the
// constraint and a fix (e.g. "try --microbatches 8").

// Sequential placement; rank r: F0..F(m-1) then B0..B(m-1).
Result<Schedule> GenerateGPipe(const GeneratorOptions& options);
// Sequential; rank r: min(p-r-1, m) warmup F, then F,B pairs, then the B's left.
Result<Schedule> Generate1F1B(const GeneratorOptions& options);
// Megatron's interleaved 1F1B, Interleaved(p, v) placement (v = chunks,
// default 2). FailedPrecondition unless m is a multiple of p.
Result<Schedule> GenerateInterleaved1F1B(const GeneratorOptions& options);
// PyTorch's ScheduleLoopedBFS, Interleaved(p, v) placement (v default 2).
Result<Schedule> GenerateLoopedBfs(const GeneratorOptions& options);
// Zero-bubble H1 (split backward, 1F1B's peak memory), sequential.
Result<Schedule> GenerateZbH1(const GeneratorOptions& options);
// Zero-bubble H2 (split backward, up to 2p-1 microbatches in flight), sequential.
Result<Schedule> GenerateZbH2(const GeneratorOptions& options);
// ZB-V: V-shape placement (chunks must be 2), split backward.
Result<Schedule> GenerateZbV(const GeneratorOptions& options);
// DualPipe-V: V-shape placement (chunks must be 2), split backward.
// FailedPrecondition unless m >= 2p.
Result<Schedule> GenerateDualPipeV(const GeneratorOptions& options);

}  // namespace pw
