#include "job/infer_job.h"

#include "job/fields_json.h"

namespace pw {

std::string InferJobToJson(const InferJob& job) {
  InferJob absolute = job;
  MakePathsAbsolute(absolute);
  nlohmann::json j;
  j["infer"] = FieldsToJson(absolute);
  return j.dump(2) + "\n";
}

Result<InferJob> InferJobFromJson(const std::string& text, const std::string& source) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("infer")) {
    return Status::InvalidArgument(source + ": not an infer job file (want {\"infer\": {...}})");
  }
  InferJob job;
  PW_RETURN_IF_ERROR(FieldsFromJson(j["infer"], job, source));
  return job;
}

}  // namespace pw
