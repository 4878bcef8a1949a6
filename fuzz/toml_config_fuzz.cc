// libFuzzer target for the TOML job config (`--config FILE.toml`): the
// [model] table (model/model_config.h, ParseModelConfig) and the [train]
// table applied to a TrainJob (job/train_job.h, ApplyTrainTable), both
// without LibTorch. Any bytes must give a value or an error, never a crash,
// hang or sanitizer report; an error must name the source and be one line;
// a model config must write (FormatModelConfig) to TOML that parses back
// and writes the same TOML again, and a train job must write to its JSON
// job file (TrainJobToJson) and read back (TrainJobFromJson) to the same
// JSON.
//
// Replayed by src/job/toml_config_fuzz_replay_test.cc (fuzz/fuzz_check.h).
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "job/train_job.h"
#include "model/model_config.h"

namespace pw::fuzz {

inline std::string TomlConfigProblem(std::string_view text) {
  std::string problem = ParseWriteProblem(
      text, "fuzz.toml", [](std::string_view t, const std::string& source) { return ParseModelConfig(t, source); },
      [](const ModelConfig& c) { return FormatModelConfig(c); });
  if (!problem.empty()) return "[model] " + problem;
  // The [train] table, then the job file of the job it gives.
  TrainJob job;
  Status applied = ApplyTrainTable(job, text, "fuzz.toml", nullptr);
  if (!applied.ok()) return MessageProblem(applied.message(), "fuzz.toml");
  problem = ParseWriteProblem(
      TrainJobToJson(job), "job.json",
      [](std::string_view t, const std::string& source) { return TrainJobFromJson(std::string(t), source); },
      [](const TrainJob& j) { return TrainJobToJson(j); });
  if (!problem.empty()) return "the job file of a [train] table: " + problem;
  return "";
}

}  // namespace pw::fuzz

PW_FUZZ_ENTRY_POINT("toml_config_fuzz", pw::fuzz::TomlConfigProblem)
