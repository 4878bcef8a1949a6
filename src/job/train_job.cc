#include "job/train_job.h"

#include <toml++/toml.h>

#include "core/file_io.h"
#include "job/fields_json.h"
#include "job/fields_toml.h"
#include "model/hf_config.h"

namespace pw {

Status ApplyTrainTable(TrainJob& job, std::string_view toml_text, std::string_view source,
                       const std::function<bool(std::string_view)>& skip) {
  return ApplyTomlTable(job, "train", toml_text, source, skip);
}

Status ResolveTrainJob(TrainJob& job, const std::function<bool(std::string_view)>& given_on_command_line) {
  if (!job.model_dir.empty()) {
    if (!job.config.empty()) {
      return Status::InvalidArgument("--model " + job.model_dir + " and --config " + job.config +
                                     " both describe the model; give one (--set model.KEY=VALUE adjusts either)");
    }
    PW_ASSIGN_OR_RETURN(job.model, ReadHfConfig(job.model_dir));
  }
  if (!job.config.empty()) {
    PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile(job.config));
    PW_ASSIGN_OR_RETURN(job.model, ParseModelConfig(text, job.config));
    PW_RETURN_IF_ERROR(ApplyTrainTable(job, text, job.config, given_on_command_line));
  }
  std::vector<std::string> model_sets;
  for (const std::string& s : job.set) {
    const size_t eq = s.find('=');
    if (s.rfind("train.", 0) == 0 && eq != std::string::npos) {
      PW_RETURN_IF_ERROR(SetFieldFromText(job, "train", std::string_view(s).substr(6, eq - 6), s.substr(eq + 1)));
      continue;
    }
    if (s.rfind("model.", 0) != 0) {
      return Status::InvalidArgument("--set " + s + ": unknown section; use model.<key>=<value> (keys of the "
                                     "[model] table) or train.<key>=<value> (the training flags by name)");
    }
    model_sets.push_back(s);
  }
  PW_RETURN_IF_ERROR(ApplyOverrides(job.model, model_sets));
  PW_RETURN_IF_ERROR(CheckResumeAuto(job));
  return CheckFieldRanges(job);
}

bool WantsHarvest(const TrainJob& job) {
  return !job.side_task.empty() || !job.side_task_cmd.empty() || !job.harvest_policy.empty() ||
         job.harvest_paired > 0;
}

Status CheckResumeAuto(const TrainJob& job) {
  if (job.resume != "auto" || !job.checkpoint_dir.empty()) return Status::Ok();
  return Status::InvalidArgument("--resume auto resumes from --checkpoint-dir when it holds a checkpoint: "
                                 "give --checkpoint-dir DIR too");
}

std::string TrainJobToJson(const TrainJob& job) {
  TrainJob absolute = job;
  MakePathsAbsolute(absolute);
  nlohmann::json j;
  j["train"] = FieldsToJson(absolute);
  j["model"] = FormatModelConfig(job.model);
  return j.dump(2) + "\n";
}

Result<TrainJob> TrainJobFromJson(const std::string& text, const std::string& source) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("train") || !j.contains("model") || !j["model"].is_string()) {
    return Status::InvalidArgument(source + ": not a train job file (want {\"train\": {...}, \"model\": \"...\"})");
  }
  TrainJob job;
  PW_RETURN_IF_ERROR(FieldsFromJson(j["train"], job, source));
  PW_ASSIGN_OR_RETURN(job.model, ParseModelConfig(j["model"].get<std::string>(), source + ": model"));
  return job;
}

}  // namespace pw
