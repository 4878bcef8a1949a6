// libFuzzer target for the TOML job config (`--config FILE.toml`): the
// [model] table (model/model_config.h, ParseModelConfig) and the [train]
// table applied to a TrainJob (job/train_job.h, ApplyTrainTable), both
// without LibTorch. Any bytes must give a value or an error, never a crash,
// hang or sanitizer report; an error must name the source and be one line;
// a model config must write (FormatModelConfig) to TOML that parses back to
// an equal config, and a train job must write to its JSON job file
// (TrainJobToJson) and read back (TrainJobFromJson) to the same JSON.
//
// Replayed by src/job/toml_config_fuzz_replay_test.cc (fuzz/fuzz_check.h).
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "job/train_job.h"
#include "model/model_config.h"

namespace pw::fuzz {

inline std::string TomlConfigProblem(std::string_view text) {
  Result<ModelConfig> model = ParseModelConfig(text, "fuzz.toml");
  if (!model.ok()) {
    std::string problem = MessageProblem(model.status().message(), "fuzz.toml");
    if (!problem.empty()) return "[model] " + problem;
  } else {
    const std::string written = FormatModelConfig(*model);
    Result<ModelConfig> again = ParseModelConfig(written, "written.toml");
    if (!again.ok()) return "written [model] does not parse: " + again.status().message() + "\n--- written:\n" + written;
    if (!(*again == *model)) return "round trip changed the model config\n--- written:\n" + written;
  }
  TrainJob job;
  Status applied = ApplyTrainTable(job, text, "fuzz.toml", nullptr);
  if (!applied.ok()) return MessageProblem(applied.message(), "fuzz.toml");
  const std::string json = TrainJobToJson(job);
  Result<TrainJob> read = TrainJobFromJson(json, "fuzz.json");
  if (!read.ok()) return "the job file of a [train] table does not read back: " + read.status().message() + "\n--- job file:\n" + json;
  const std::string rewritten = TrainJobToJson(*read);
  if (rewritten != json) return "job file round trip changed the job\n--- first:\n" + json + "--- second:\n" + rewritten;
  return "";
}

}  // namespace pw::fuzz

PW_FUZZ_ENTRY_POINT("toml_config_fuzz", pw::fuzz::TomlConfigProblem)
