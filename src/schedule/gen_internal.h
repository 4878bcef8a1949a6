// Helpers shared by the built-in generators (schedule/gen_*.cc): parameter
// checks with messages that say how to fix them, and the empty schedule each
// generator fills. Not a public API; include schedule/generators.h instead.
#pragma once

#include <cstddef>
#include <string_view>

#include "core/status.h"
#include "schedule/generators.h"
#include "schedule/schedule.h"

namespace pw::gen_internal {

// How many stages per rank a family accepts.
enum class ChunkRule {
  kOne,      // sequential placement: chunks must be 0 (default) or 1
  kTwo,      // V-shape placement: chunks must be 0 (default) or 2
  kAtLeast1  // interleaved placement: any chunks >= 1; 0 means the default
};

// Checked parameters of one generator call.
struct Shape {
  int p = 1;  // ranks
  int m = 1;  // microbatches
  int v = 1;  // stages per rank
};

// Checks ranks >= 1, microbatches >= 1 and chunks against `rule`
// (`default_chunks` replaces 0), and that p*v*m*`actions_per_cell` stays
// within kMaxGeneratedActions. Returns InvalidArgument naming `family`, the
// constraint and a fix otherwise.
Result<Shape> CheckShape(std::string_view family, const GeneratorOptions& options, ChunkRule rule,
                         int default_chunks, int actions_per_cell);

// An empty schedule for `placement` whose programs have room for
// `actions_per_rank` actions each (so that generators never reallocate).
Schedule NewSchedule(std::string_view name, Placement placement, int num_microbatches,
                     size_t actions_per_rank);

}  // namespace pw::gen_internal
