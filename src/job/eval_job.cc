#include "job/eval_job.h"

#include "job/fields_json.h"

namespace pw {

std::string EvalJobToJson(const EvalJob& job) {
  EvalJob absolute = job;
  MakePathsAbsolute(absolute);
  nlohmann::json j;
  j["eval"] = FieldsToJson(absolute);
  return j.dump(2) + "\n";
}

Result<EvalJob> EvalJobFromJson(const std::string& text, const std::string& source) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("eval")) {
    return Status::InvalidArgument(source + ": not an eval job file (want {\"eval\": {...}})");
  }
  EvalJob job;
  PW_RETURN_IF_ERROR(FieldsFromJson(j["eval"], job, source));
  return job;
}

}  // namespace pw
