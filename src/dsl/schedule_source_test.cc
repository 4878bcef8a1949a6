// LoadSchedule: built-in families (any spelling), .pipe programs whose shape
// given values override, and CSV / text files whose shape given values may
// not contradict. Tests run with the repository root as working directory.
#include "dsl/schedule_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "dsl/compiler.h"
#include "dsl/parser.h"
#include "schedule/generators.h"
#include "schedule/text_format.h"
#include "schedule/validator.h"
#include "sim/cost_model_json.h"

namespace pw::dsl {
namespace {

ScheduleSource Source(const std::string& schedule, int ranks, int microbatches) {
  ScheduleSource s;
  s.schedule = schedule;
  s.ranks = ranks;
  s.microbatches = microbatches;
  return s;
}

TEST(ScheduleSourceTest, BuiltinFamiliesInAnySpelling) {
  EXPECT_TRUE(IsBuiltinScheduleFamily("zb-v"));
  EXPECT_TRUE(IsBuiltinScheduleFamily("ZBVZeroBubble"));
  EXPECT_FALSE(IsBuiltinScheduleFamily("examples/schedules/1f1b.pipe"));
  EXPECT_FALSE(IsBuiltinScheduleFamily(""));
  for (const char* name : {"1f1b", "PipeDreamFlush", "Interleaved1F1B"}) {
    ScheduleSource source = Source(name, 4, 8);
    source.chunks = 0;
    Result<Schedule> s = LoadSchedule(source);
    ASSERT_TRUE(s.ok()) << name << ": " << s.status().ToString();
    EXPECT_EQ(s->num_ranks(), 4);
    EXPECT_EQ(s->num_microbatches, 8);
  }
  ScheduleSource interleaved = Source("interleaved-1f1b", 2, 4);
  interleaved.chunks = 3;
  Result<Schedule> s = LoadSchedule(interleaved);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->num_stages(), 6);
}

// Built-in families skip the validator (valid by construction; the proof
// over many shapes is schedule/generators_valid_test.cc): the fast path must
// give the generator's schedule, and the slow path's verdict must be OK.
TEST(ScheduleSourceTest, BuiltinFastPathGivesTheGeneratorsValidSchedule) {
  for (const std::string& family : BuiltinScheduleNames()) {
    ScheduleSource source = Source(family, 4, 8);
    Result<Schedule> loaded = LoadSchedule(source);
    ASSERT_TRUE(loaded.ok()) << family << ": " << loaded.status().ToString();
    GeneratorOptions g;
    g.num_ranks = 4;
    g.num_microbatches = 8;
    Result<Schedule> generated = GenerateSchedule(family, g);
    ASSERT_TRUE(generated.ok()) << family;
    EXPECT_EQ(*loaded, *generated) << family;
    EXPECT_EQ(loaded->name, generated->name) << family;
    EXPECT_TRUE(ValidateSchedule(*loaded).ok()) << family << ": " << ValidateSchedule(*loaded).ToString();
  }
  // Shapes a generator refuses still fail, with the generator's message.
  Result<Schedule> refused = LoadSchedule(Source("interleaved-1f1b", 4, 6));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("multiple of the number of ranks"), std::string::npos)
      << refused.status().ToString();
}

TEST(ScheduleSourceTest, UnknownNameIsNotFound) {
  Result<Schedule> s = LoadSchedule(Source("no-such-family", 2, 2));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("unknown schedule 'no-such-family'"), std::string::npos);
}

TEST(ScheduleSourceTest, PipeShapeIsADefaultThatGivenValuesOverride) {
  const std::string path = "examples/schedules/1f1b.pipe";
  ScheduleSource source = Source(path, 3, 5);
  Result<Schedule> own = LoadSchedule(source);  // nothing given: the file's shape
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  source.ranks_given = source.microbatches_given = true;
  Result<Schedule> overridden = LoadSchedule(source);
  ASSERT_TRUE(overridden.ok()) << overridden.status().ToString();
  EXPECT_EQ(overridden->num_ranks(), 3);
  EXPECT_EQ(overridden->num_microbatches, 5);
  source.chunks_given = true;
  EXPECT_EQ(LoadSchedule(source).status().code(), StatusCode::kInvalidArgument);
}

TEST(ScheduleSourceTest, TextFileShapeMayNotBeContradicted) {
  GeneratorOptions g;
  g.num_ranks = 2;
  g.num_microbatches = 4;
  Result<Schedule> generated = GenerateSchedule("zb-h1", g);
  ASSERT_TRUE(generated.ok());
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("pw_schedule_source_" + std::to_string(::getpid()) + ".txt"))
                               .string();
  std::ofstream(path) << FormatScheduleText(*generated);

  ScheduleSource source = Source(path, 7, 4);  // ranks not given: ignored
  Result<Schedule> s = LoadSchedule(source);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->num_ranks(), 2);
  source.ranks_given = true;
  s = LoadSchedule(source);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("contradicts"), std::string::npos) << s.status().message();
  source.ranks = 2;
  source.microbatches_given = true;
  EXPECT_TRUE(LoadSchedule(source).ok());
  source.chunks_given = true;
  EXPECT_EQ(LoadSchedule(source).status().code(), StatusCode::kInvalidArgument);
  std::filesystem::remove(path);
}

TEST(ScheduleSourceTest, PipeLayersComeWithTheSchedule) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("pw_schedule_source_layers_" + std::to_string(::getpid()) + ".pipe"))
                               .string();
  std::ofstream(path) << "ranks 2\nplacement interleaved 2\n\nlayers 1 2 2 1\n";
  Result<LoadedSchedule> loaded = LoadScheduleWithLayers(Source(path, 2, 4));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->schedule.num_stages(), 4);
  EXPECT_EQ(loaded->layers_per_stage, (std::vector<int>{1, 2, 2, 1}));
  EXPECT_EQ(loaded->layers_where, path + ":4:1 'layers 1 2 2 1'");
  EXPECT_TRUE(LoadSchedule(Source(path, 2, 4)).ok());

  // Three ranks make six stages: the list no longer fits.
  ScheduleSource three = Source(path, 3, 6);
  three.ranks_given = true;
  Result<LoadedSchedule> wrong = LoadScheduleWithLayers(three);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find(path + ":4:1 'layers 1 2 2 1' lists 4 stages, but the schedule has 6"),
            std::string::npos)
      << wrong.status().message();

  // Built-in families and files without the directive have none.
  Result<LoadedSchedule> builtin = LoadScheduleWithLayers(Source("1f1b", 2, 4));
  ASSERT_TRUE(builtin.ok());
  EXPECT_TRUE(builtin->layers_per_stage.empty());
  std::filesystem::remove(path);
}

// A program's `costs` line: the file (relative to the program) is what the
// list scheduler orders by, unless the caller gives costs; a missing file
// is an error naming the line, never a silent fallback to the defaults.
TEST(ScheduleSourceTest, PipeCostsLineGivesTheCompilersCosts) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("pw_schedule_source_costs_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "c");
  // Stage 0 much slower: with split backward the list scheduler's order
  // differs from the one under the default (uniform) costs.
  std::ofstream(dir / "c" / "skewed.json")
      << R"({"stages": [{"F": 9, "B": 18, "I": 9, "W": 9}, {"F": 1, "B": 2, "I": 1, "W": 1}]})";
  const std::string text = "ranks 2\nmicrobatches 6\nbackward split\npriority F > I > W\nwarmup 2\n";
  const std::string with_line = (dir / "p.pipe").string();
  const std::string without = (dir / "bare.pipe").string();
  std::ofstream(with_line) << text << "costs c/skewed.json\n";
  std::ofstream(without) << text;

  Result<LoadedSchedule> loaded = LoadScheduleWithLayers(Source(with_line, 2, 6));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->costs_path, (dir / "c" / "skewed.json").string());
  Result<std::optional<CostModel>> line = LoadPipeCosts(with_line);
  ASSERT_TRUE(line.ok() && line->has_value()) << line.status().ToString();
  EXPECT_EQ(line->value().stages.size(), 2u);
  EXPECT_FALSE(LoadPipeCosts(without).value().has_value());

  // The same program compiled directly with the file's costs: the same order.
  Result<PipeProgram> program = LoadPipeFile(without);
  ASSERT_TRUE(program.ok());
  CompileOptions skewed;
  skewed.costs = LoadCostModelFile((dir / "c" / "skewed.json").string()).value();
  Result<Schedule> expected = CompilePipeProgram(*program, skewed);
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  EXPECT_EQ(FormatScheduleText(loaded->schedule), FormatScheduleText(*expected));
  Result<Schedule> plain = LoadSchedule(Source(without, 2, 6));
  ASSERT_TRUE(plain.ok());
  ASSERT_NE(FormatScheduleText(*plain), FormatScheduleText(*expected)) << "the costs do not change the order";

  // Given costs replace the line's.
  ScheduleSource given = Source(with_line, 2, 6);
  given.pipe_costs_given = true;
  Result<LoadedSchedule> overridden = LoadScheduleWithLayers(given);
  ASSERT_TRUE(overridden.ok());
  EXPECT_EQ(FormatScheduleText(overridden->schedule), FormatScheduleText(*plain));
  EXPECT_EQ(overridden->costs_path, "");

  // Moved away from its costs file: an error naming the line, and the fix.
  std::filesystem::remove(dir / "c" / "skewed.json");
  Result<Schedule> missing = LoadSchedule(Source(with_line, 2, 6));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(with_line + ":6:1 'costs c/skewed.json' (" +
                                             (dir / "c" / "skewed.json").string() + "): "),
            std::string::npos)
      << missing.status().message();
  EXPECT_EQ(LoadPipeCosts(with_line).status().message(), missing.status().message());
  EXPECT_NE(missing.status().message().find("delete the line"), std::string::npos) << missing.status().message();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pw::dsl
