#include "core/status_record.h"

namespace pw {
namespace {

constexpr std::string_view kPrefix = "pipewright-status: ";

// The value of `key=` among the space-separated fields of `fields`.
std::string_view FieldValue(std::string_view fields, std::string_view key) {
  size_t at = 0;
  while (at < fields.size()) {
    size_t end = fields.find(' ', at);
    if (end == std::string_view::npos) end = fields.size();
    std::string_view field = fields.substr(at, end - at);
    if (field.size() > key.size() && field.starts_with(key) && field[key.size()] == '=') {
      return field.substr(key.size() + 1);
    }
    at = end + 1;
  }
  return {};
}

StatusCode CodeFromName(std::string_view name) {
  for (StatusCode c : {StatusCode::kInvalidArgument, StatusCode::kNotFound, StatusCode::kFailedPrecondition,
                       StatusCode::kDeadlock, StatusCode::kIoError, StatusCode::kInternal}) {
    if (StatusCodeName(c) == name) return c;
  }
  return StatusCode::kInternal;
}

}  // namespace

std::string StatusRecordLine(const Status& status) {
  PW_CHECK(!status.ok(), "a status record is written for a failure only");
  return std::string(kPrefix) + "code=" + std::string(StatusCodeName(status.code())) +
         " reason=" + std::string(StatusReasonName(status.reason()));
}

std::optional<StatusRecord> ParseStatusRecordLine(std::string_view line) {
  if (!line.starts_with(kPrefix)) return std::nullopt;
  const std::string_view fields = line.substr(kPrefix.size());
  StatusRecord record;
  record.code = CodeFromName(FieldValue(fields, "code"));
  record.reason = StatusReasonFromName(FieldValue(fields, "reason"));
  return record;
}

}  // namespace pw
