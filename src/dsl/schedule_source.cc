#include "dsl/schedule_source.h"

#include <filesystem>

#include "core/file_io.h"
#include "dsl/compiler.h"
#include "dsl/parser.h"
#include "schedule/csv_format.h"
#include "schedule/generators.h"
#include "schedule/text_format.h"
#include "schedule/validator.h"
#include "sim/cost_model_json.h"

namespace pw::dsl {
namespace {

// A file decides its own shape; a shape setting that contradicts it is an error.
Status CheckShapeAgainstFile(const ScheduleSource& source, const Schedule& s) {
  if (source.ranks_given && source.ranks != s.num_ranks()) {
    return Status::InvalidArgument("--ranks " + std::to_string(source.ranks) + " contradicts '" +
                                   source.schedule + "', which has " + std::to_string(s.num_ranks()) +
                                   " ranks; drop --ranks");
  }
  if (source.microbatches_given && source.microbatches != s.num_microbatches) {
    return Status::InvalidArgument("--microbatches " + std::to_string(source.microbatches) +
                                   " contradicts '" + source.schedule + "', which has " +
                                   std::to_string(s.num_microbatches) + " microbatches; drop --microbatches");
  }
  if (source.chunks_given) {
    return Status::InvalidArgument("--chunks applies to built-in families only; '" + source.schedule +
                                   "' is a file with its own placement");
  }
  return Status::Ok();
}

std::string ResolveCostsPath(const std::string& pipe_file, const PipeProgram& program) {
  const std::filesystem::path written(program.costs_file);
  if (written.is_absolute()) return written.string();
  return (std::filesystem::path(pipe_file).parent_path() / written).lexically_normal().string();
}

// "best.pipe:5:1 'costs best.costs.json'", for messages.
std::string CostsLineWhere(const std::string& pipe_file, const PipeProgram& program) {
  const SourceLoc& at = program.costs_loc;
  return pipe_file + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + " 'costs " +
         program.costs_file + "'";
}

// The costs of a program's `costs` line, read from `path` (the line's file
// resolved by ResolveCostsPath); the program must have the line.
Result<CostModel> LoadCostsLine(const std::string& pipe_file, const PipeProgram& program, const std::string& path) {
  Result<CostModel> costs = LoadCostModelFile(path);
  if (costs.ok()) return costs;
  return Status(costs.status().code(),
                CostsLineWhere(pipe_file, program) + (path == program.costs_file ? "" : " (" + path + ")") + ": " +
                    costs.status().message() +
                    "\nhint: keep the costs file `plan -o` wrote beside the program, give the costs on the "
                    "command line (--schedule-costs or --cost-file), or delete the line");
}

// A .pipe program: its shape is a default that given ranks/microbatches
// override, and its list scheduler sees the costs the simulator will: the
// given ones, else those of its `costs` line.
Result<LoadedSchedule> CompilePipeFile(const ScheduleSource& source) {
  PW_ASSIGN_OR_RETURN(PipeProgram program, LoadPipeFile(source.schedule));
  if (source.chunks_given) {
    return Status::InvalidArgument("--chunks applies to built-in families only; set the chunks in '" +
                                   source.schedule + "' (placement interleaved V)");
  }
  CompileOptions compile;
  if (source.ranks_given) compile.ranks = source.ranks;
  if (source.microbatches_given) compile.microbatches = source.microbatches;
  compile.costs = source.pipe_costs;
  LoadedSchedule out;
  const bool line_read_here = !source.pipe_costs_given && !program.costs_file.empty();
  if (line_read_here) {
    out.costs_path = ResolveCostsPath(source.schedule, program);
    PW_ASSIGN_OR_RETURN(compile.costs, LoadCostsLine(source.schedule, program, out.costs_path));
  }
  Result<Schedule> compiled = CompilePipeProgram(program, compile);
  const bool line_costs = line_read_here || (source.pipe_costs_from_line && !program.costs_file.empty());
  if (!compiled.ok() && line_costs && compiled.status().reason() == StatusReason::kCostsDoNotFit) {
    // The line's costs fit the shape the program was planned for.
    return Status(compiled.status().code(),
                  compiled.status().message() + "\nhint: " + CostsLineWhere(source.schedule, program) +
                      " gives the costs of the shape the program was planned for; for another shape (--ranks, "
                      "--pp) give costs of that shape (--cost-file, --schedule-costs) or delete the line")
        .WithReason(StatusReason::kCostsDoNotFit);
  }
  PW_ASSIGN_OR_RETURN(out.schedule, std::move(compiled));
  out.layers_per_stage = program.layers_per_stage;
  if (out.layers_per_stage.empty()) return out;
  std::string directive = "layers";
  for (int n : out.layers_per_stage) directive += " " + std::to_string(n);
  const SourceLoc& at = program.layers_loc;
  out.layers_where = source.schedule + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + " '" +
                     directive + "'";
  const int stages = out.schedule.num_stages();
  if (static_cast<int>(out.layers_per_stage.size()) != stages) {
    return Status::InvalidArgument(out.layers_where + " lists " + std::to_string(out.layers_per_stage.size()) +
                                   " stages, but the schedule has " + std::to_string(stages) + " (" +
                                   std::to_string(out.schedule.num_ranks()) +
                                   " ranks); give the blocks of every stage, in stage order");
  }
  return out;
}

}  // namespace

Result<std::optional<CostModel>> LoadPipeCosts(const std::string& pipe_file) {
  PW_ASSIGN_OR_RETURN(PipeProgram program, LoadPipeFile(pipe_file));
  if (program.costs_file.empty()) return std::optional<CostModel>();
  PW_ASSIGN_OR_RETURN(CostModel costs, LoadCostsLine(pipe_file, program, ResolveCostsPath(pipe_file, program)));
  return std::optional<CostModel>(std::move(costs));
}

namespace {

Result<LoadedSchedule> ReadScheduleFile(const ScheduleSource& source) {
  std::error_code ec;
  if (!std::filesystem::exists(source.schedule, ec)) {
    return Status::NotFound("unknown schedule '" + source.schedule + "': not a built-in family (" +
                            BuiltinScheduleNameList() + ") and no such file");
  }
  const std::string extension = std::filesystem::path(source.schedule).extension().string();
  if (extension == ".pipe") return CompilePipeFile(source);
  PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile(source.schedule));
  Schedule schedule;
  if (extension == ".csv") {
    PW_ASSIGN_OR_RETURN(schedule, ParseScheduleCsv(text, source.schedule, CsvImportOptions{}));
  } else {
    PW_ASSIGN_OR_RETURN(schedule, ParseScheduleText(text, source.schedule));
  }
  PW_RETURN_IF_ERROR(CheckShapeAgainstFile(source, schedule));
  return LoadedSchedule{std::move(schedule), {}, {}};
}

}  // namespace

Result<LoadedSchedule> LoadScheduleWithLayers(const ScheduleSource& source) {
  LoadedSchedule loaded;
  if (IsBuiltinScheduleFamily(source.schedule)) {
    GeneratorOptions g;
    g.num_ranks = source.ranks;
    g.num_microbatches = source.microbatches;
    g.chunks = source.chunks;
    PW_ASSIGN_OR_RETURN(loaded.schedule, GenerateSchedule(source.schedule, g));
    // A built-in family is valid by construction: every shape its generator
    // accepts passes every check, the dry run included
    // (schedule/generators_valid_test.cc proves it over a grid of shapes).
    // Validating again cost a fifth of `schedule sim` at p = 1024, m = 8192.
    return loaded;
  }
  PW_ASSIGN_OR_RETURN(loaded, ReadScheduleFile(source));
  ValidateOptions validate;
  validate.dry_run = source.dry_run;
  Status valid = ValidateSchedule(loaded.schedule, validate);
  if (!valid.ok()) return valid.WithContext("schedule '" + source.schedule + "' is invalid");
  return loaded;
}

Result<Schedule> LoadSchedule(const ScheduleSource& source) {
  PW_ASSIGN_OR_RETURN(LoadedSchedule loaded, LoadScheduleWithLayers(source));
  return std::move(loaded.schedule);
}

}  // namespace pw::dsl
