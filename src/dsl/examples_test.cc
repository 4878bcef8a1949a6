// The built-in families as .pipe policies (examples/schedules/*.pipe): each
// file, compiled for a shape, gives the generator's schedule, or one with the
// same makespan and per-rank peak memory under uniform costs, as its header
// comment says. Tests run with the repository root as working directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "dsl/compiler.h"
#include "dsl/parser.h"
#include "schedule/generators.h"
#include "schedule/validator.h"
#include "sim/simulator.h"

namespace pw::dsl {
namespace {

// What a family's file promises for a shape.
enum class Match {
  kExact,    // the generator's schedule, action for action
  kSame,     // same makespan and per-rank peak memory (the order may differ)
  kNoWorse,  // same per-rank peak memory, makespan no longer
};

struct Family {
  const char* name;
  Match (*expect)(int p, int m);
};

const Family kFamilies[] = {
    {"gpipe", [](int, int) { return Match::kExact; }},
    {"1f1b", [](int, int) { return Match::kExact; }},
    {"interleaved-1f1b", [](int p, int m) { return m == p ? Match::kExact : Match::kSame; }},
    {"looped-bfs", [](int, int) { return Match::kSame; }},
    {"zb-h1", [](int p, int m) { return m >= p ? Match::kExact : Match::kSame; }},
    {"zb-h2", [](int, int) { return Match::kExact; }},
    {"zb-v", [](int p, int m) { return m >= 2 * p - 1 ? Match::kSame : Match::kNoWorse; }},
    {"dualpipe-v", [](int, int) { return Match::kSame; }},
};

// examples/schedules/<family>.pipe, found from the working directory (the
// repository root under ctest) or a parent of it.
std::string ExamplePath(const std::string& family) {
  std::filesystem::path dir = std::filesystem::current_path();
  for (int up = 0; up < 4; ++up) {
    const auto candidate = dir / "examples" / "schedules" / (family + ".pipe");
    if (std::filesystem::exists(candidate)) return candidate.string();
    dir = dir.parent_path();
  }
  return "examples/schedules/" + family + ".pipe";
}

struct Measured {
  double makespan = 0;
  std::vector<double> peaks;  // per rank, in stage activations
};

// Uniform costs (F=1, B=2, so I=W=1); every stage's activations weigh 1 and
// are held until B or W, so peaks count stage activations in flight.
Measured Measure(const Schedule& s) {
  CostModel costs;
  costs.stages[0].activation_bytes = 1;
  costs.stages[0].freed_by_input = 0;
  EXPECT_TRUE(costs.Resolve(s).ok());
  Result<SimResult> sim = Simulate(s, costs, {.record_spans = false, .record_bubbles = false});
  EXPECT_TRUE(sim.ok()) << sim.status().ToString();
  Measured out;
  if (!sim.ok()) return out;
  out.makespan = sim->makespan;
  for (const RankSimResult& r : sim->ranks) out.peaks.push_back(r.peak_memory);
  return out;
}

TEST(ExamplesTest, EveryFamilyHasAFileThatParses) {
  for (const Family& f : kFamilies) {
    Result<PipeProgram> program = LoadPipeFile(ExamplePath(f.name));
    ASSERT_TRUE(program.ok()) << program.status().ToString();
    EXPECT_EQ(program->name, f.name);
    // The printer's text of the file compiles to the same schedule.
    Result<PipeProgram> again = ParsePipeProgram(FormatPipeProgram(*program), "formatted.pipe");
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    Result<Schedule> a = CompilePipeProgram(*program);
    Result<Schedule> b = CompilePipeProgram(*again);
    ASSERT_TRUE(a.ok() && b.ok()) << f.name;
    EXPECT_EQ(*a, *b) << f.name;
  }
}

TEST(ExamplesTest, FilesReproduceTheGenerators) {
  for (const Family& f : kFamilies) {
    Result<PipeProgram> program = LoadPipeFile(ExamplePath(f.name));
    ASSERT_TRUE(program.ok()) << program.status().ToString();
    for (int p : {2, 4, 8}) {
      for (int m : {p, 2 * p, 4 * p}) {
        SCOPED_TRACE(std::string(f.name) + " p=" + std::to_string(p) + " m=" + std::to_string(m));
        Result<Schedule> generated = GenerateSchedule(f.name, {.num_ranks = p, .num_microbatches = m});
        if (!generated.ok()) continue;  // the family does not allow this shape (dualpipe-v, m < 2p)
        Result<Schedule> compiled = CompilePipeProgram(*program, {.ranks = p, .microbatches = m});
        ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
        ASSERT_TRUE(ValidateSchedule(*compiled).ok()) << ValidateSchedule(*compiled).ToString();
        const Match expect = f.expect(p, m);
        if (expect == Match::kExact) {
          EXPECT_EQ(*compiled, *generated);
          continue;
        }
        const Measured c = Measure(*compiled), g = Measure(*generated);
        EXPECT_EQ(c.peaks, g.peaks);
        if (expect == Match::kSame) {
          EXPECT_EQ(c.makespan, g.makespan);
        } else {
          EXPECT_LE(c.makespan, g.makespan);
        }
      }
    }
  }
}

// The claims in the files' headers, over every m up to 5p for p <= 6.
TEST(ExamplesTest, HeaderClaimsHoldForEveryShape) {
  for (const Family& f : kFamilies) {
    Result<PipeProgram> program = LoadPipeFile(ExamplePath(f.name));
    ASSERT_TRUE(program.ok()) << program.status().ToString();
    for (int p = 1; p <= 8; ++p) {
      for (int m = 1; m <= 5 * p; ++m) {
        Result<Schedule> generated = GenerateSchedule(f.name, {.num_ranks = p, .num_microbatches = m});
        if (!generated.ok()) continue;
        SCOPED_TRACE(std::string(f.name) + " p=" + std::to_string(p) + " m=" + std::to_string(m));
        Result<Schedule> compiled = CompilePipeProgram(*program, {.ranks = p, .microbatches = m});
        ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
        if (*compiled == *generated) continue;
        EXPECT_NE(f.expect(p, m), Match::kExact);
        const Measured c = Measure(*compiled), g = Measure(*generated);
        EXPECT_EQ(c.peaks, g.peaks);
        if (f.expect(p, m) == Match::kSame) EXPECT_EQ(c.makespan, g.makespan);
        else EXPECT_LE(c.makespan, g.makespan);
      }
    }
  }
}

}  // namespace
}  // namespace pw::dsl
