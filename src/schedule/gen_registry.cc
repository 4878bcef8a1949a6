// The table of built-in schedule families, name lookup, and the parameter
// checks every generator shares (schedule/gen_internal.h).
#include <array>
#include <cctype>
#include <string>

#include "schedule/gen_internal.h"
#include "schedule/generators.h"

namespace pw {
namespace {

constexpr std::array<ScheduleFamily, 8> kFamilies = {{
    {"gpipe", "GPipe: all forwards, then all backwards; holds m microbatches of activations", 1,
     &GenerateGPipe},
    {"1f1b", "1F1B (PipeDream-Flush): warmup forwards, then one forward one backward", 1, &Generate1F1B},
    {"interleaved-1f1b",
     "Megatron's interleaved 1F1B over --chunks stages per rank (default 2); m a multiple of ranks", 2,
     &GenerateInterleaved1F1B},
    {"looped-bfs", "looped BFS: every forward of each local stage in turn, then backwards in reverse", 2,
     &GenerateLoopedBfs},
    {"zb-h1", "zero-bubble H1: split backward (I, W), 1F1B's peak memory, a third of its bubble", 1,
     &GenerateZbH1},
    {"zb-h2", "zero-bubble H2: split backward, up to 2p-1 microbatches in flight, no bubble inside a rank",
     1, &GenerateZbH2},
    {"zb-v", "ZB-V: V-shape placement (2 stages per rank), split backward, 1F1B's peak memory", 2,
     &GenerateZbV},
    {"dualpipe-v", "DualPipe-V: DeepSeek's cut-in-half DualPipe on a V-shape; needs m >= 2 x ranks", 2,
     &GenerateDualPipeV},
}};

// Lower case without '-' and '_': the form names are compared in.
std::string Normalize(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    if (c == '-' || c == '_' || c == ' ') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

// PyTorch spellings that do not normalize to one of ours.
struct Alias {
  std::string_view alias;   // normalized
  std::string_view family;  // canonical
};
constexpr std::array<Alias, 4> kAliases = {{
    {"zbvzerobubble", "zb-v"},
    {"pipedreamflush", "1f1b"},
    {"interleaved", "interleaved-1f1b"},
    {"zb1p", "zb-h1"},
}};

}  // namespace

std::span<const ScheduleFamily> BuiltinScheduleFamilies() { return kFamilies; }

std::vector<std::string> BuiltinScheduleNames() {
  std::vector<std::string> names;
  names.reserve(kFamilies.size());
  for (const ScheduleFamily& f : kFamilies) names.emplace_back(f.name);
  return names;
}

std::string BuiltinScheduleNameList() {
  std::string out;
  for (const ScheduleFamily& f : kFamilies) out += (out.empty() ? "" : ", ") + std::string(f.name);
  return out;
}

const ScheduleFamily* FindScheduleFamily(std::string_view name) {
  const std::string key = Normalize(name);
  std::string_view canonical;
  for (const Alias& a : kAliases) {
    if (a.alias == key) canonical = a.family;
  }
  for (const ScheduleFamily& f : kFamilies) {
    if (Normalize(f.name) == key || f.name == canonical) return &f;
  }
  return nullptr;
}

bool IsBuiltinScheduleFamily(std::string_view name) { return FindScheduleFamily(name) != nullptr; }

Result<Schedule> GenerateSchedule(std::string_view family, const GeneratorOptions& options) {
  if (const ScheduleFamily* f = FindScheduleFamily(family)) return f->generate(options);
  return Status::NotFound("unknown schedule family '" + std::string(family) + "'; the built-in ones are " +
                          BuiltinScheduleNameList());
}

namespace gen_internal {

Result<Shape> CheckShape(std::string_view family, const GeneratorOptions& options, ChunkRule rule,
                         int default_chunks, int actions_per_cell) {
  const std::string name(family);
  if (options.num_ranks < 1) {
    return Status::InvalidArgument(name + " needs at least 1 rank, got --ranks " +
                                   std::to_string(options.num_ranks));
  }
  if (options.num_microbatches < 1) {
    return Status::InvalidArgument(name + " needs at least 1 microbatch, got --microbatches " +
                                   std::to_string(options.num_microbatches));
  }
  Shape shape;
  shape.p = options.num_ranks;
  shape.m = options.num_microbatches;
  shape.v = options.chunks == 0 ? default_chunks : options.chunks;
  switch (rule) {
    case ChunkRule::kOne:
      if (shape.v != 1) {
        return Status::InvalidArgument(name + " places one stage per rank, so --chunks must be 1 (got " +
                                       std::to_string(options.chunks) +
                                       "); for several stages per rank use interleaved-1f1b, looped-bfs, "
                                       "zb-v or dualpipe-v");
      }
      break;
    case ChunkRule::kTwo:
      if (shape.v != 2) {
        return Status::InvalidArgument(name + " needs two stages per rank (--chunks 2), got --chunks " +
                                       std::to_string(options.chunks));
      }
      break;
    case ChunkRule::kAtLeast1:
      if (shape.v < 1) {
        return Status::InvalidArgument(name + " needs at least 1 stage per rank, got --chunks " +
                                       std::to_string(options.chunks) + "; try --chunks " +
                                       std::to_string(default_chunks));
      }
      break;
  }
  // 64-bit arithmetic, stages first: p * v < 2^62, and once it is at most
  // the limit (2^28), p * v * m * actions_per_cell < 2^63 as well.
  const long long stages = static_cast<long long>(shape.p) * shape.v;
  const long long actions =
      stages > kMaxGeneratedActions ? stages : stages * shape.m * actions_per_cell;
  if (actions > kMaxGeneratedActions) {
    return Status::InvalidArgument(name + " with " + std::to_string(shape.p) + " ranks, " +
                                   std::to_string(shape.m) + " microbatches and " + std::to_string(shape.v) +
                                   " stages per rank would hold more than the limit of " +
                                   std::to_string(kMaxGeneratedActions) +
                                   " actions; use fewer ranks, microbatches or chunks");
  }
  return shape;
}

Schedule NewSchedule(std::string_view name, Placement placement, int num_microbatches,
                     size_t actions_per_rank) {
  Schedule s = MakeEmptySchedule(std::string(name), std::move(placement), num_microbatches);
  for (Program& program : s.programs) program.reserve(actions_per_rank);
  return s;
}

}  // namespace gen_internal
}  // namespace pw
