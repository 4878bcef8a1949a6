// The built-in generators as planner seeds: every family of
// schedule/generators.h (interleaved ones with v = 2..max chunks), and how
// a built-in's schedule is written as a .pipe program when it wins.
//
// Pure functions; safe to call concurrently.
#pragma once

#include <string>
#include <vector>

#include "dsl/pipe_program.h"
#include "schedule/schedule.h"

namespace pw::search {

struct BuiltinSeed {
  std::string family;  // canonical name, e.g. "interleaved-1f1b"
  int chunks = 0;      // GeneratorOptions::chunks; 0 = the family's default
  // "zb-v", "interleaved-1f1b v=3".
  std::string Label() const;
};

// Every built-in family once, and interleaved-1f1b / looped-bfs once per
// v = 2 .. max(2, max_chunks), in BuiltinScheduleFamilies() order.
std::vector<BuiltinSeed> BuiltinSeeds(int max_chunks);

// The placement of a generated schedule as a .pipe placement: sequential,
// interleaved (with its chunks), V-shape, or explicit.
dsl::PlacementSpec PlacementSpecOf(const Schedule& schedule);

// A program that pins every rank to `schedule`'s exact action order:
// compiling it gives `schedule` back whatever the costs. Compute-only
// schedules (F/B/I/W) are what the generators return.
dsl::PipeProgram PinnedProgram(const Schedule& schedule, std::string name);

}  // namespace pw::search
