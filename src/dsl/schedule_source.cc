#include "dsl/schedule_source.h"

#include <filesystem>

#include "core/file_io.h"
#include "dsl/compiler.h"
#include "dsl/parser.h"
#include "schedule/csv_format.h"
#include "schedule/generators.h"
#include "schedule/text_format.h"
#include "schedule/validator.h"

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

// A .pipe program: its shape is a default that given ranks/microbatches
// override, and its list scheduler sees the costs the simulator will.
Result<Schedule> CompilePipeFile(const ScheduleSource& source) {
  PW_ASSIGN_OR_RETURN(PipeProgram program, LoadPipeFile(source.schedule));
  if (source.chunks_given) {
    return Status::InvalidArgument("--chunks applies to built-in families only; set the chunks in '" +
                                   source.schedule + "' (placement interleaved V)");
  }
  CompileOptions compile;
  if (source.ranks_given) compile.ranks = source.ranks;
  if (source.microbatches_given) compile.microbatches = source.microbatches;
  compile.costs = source.pipe_costs;
  return CompilePipeProgram(program, compile);
}

Result<Schedule> ReadScheduleFile(const ScheduleSource& source) {
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
  return schedule;
}

}  // namespace

Result<Schedule> LoadSchedule(const ScheduleSource& source) {
  Schedule schedule;
  if (IsBuiltinScheduleFamily(source.schedule)) {
    GeneratorOptions g;
    g.num_ranks = source.ranks;
    g.num_microbatches = source.microbatches;
    g.chunks = source.chunks;
    PW_ASSIGN_OR_RETURN(schedule, GenerateSchedule(source.schedule, g));
  } else {
    PW_ASSIGN_OR_RETURN(schedule, ReadScheduleFile(source));
  }
  Status valid = ValidateSchedule(schedule);
  if (!valid.ok()) return valid.WithContext("schedule '" + source.schedule + "' is invalid");
  return schedule;
}

}  // namespace pw::dsl
