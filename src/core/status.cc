#include "core/status.h"

#include <cstdio>
#include <cstdlib>

namespace pw {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kDeadlock: return "Deadlock";
    case StatusCode::kIoError: return "IoError";
    case StatusCode::kInternal: return "Internal";
  }
  return "Unknown";
}

std::string_view StatusReasonName(StatusReason reason) {
  switch (reason) {
    case StatusReason::kUnspecified: return "unspecified";
    case StatusReason::kPeerTimedOut: return "peer-timed-out";
    case StatusReason::kPeerLost: return "peer-lost";
    case StatusReason::kCostsDoNotFit: return "costs-do-not-fit";
  }
  return "unspecified";
}

StatusReason StatusReasonFromName(std::string_view name) {
  for (StatusReason r : {StatusReason::kPeerTimedOut, StatusReason::kPeerLost, StatusReason::kCostsDoNotFit}) {
    if (StatusReasonName(r) == name) return r;
  }
  return StatusReason::kUnspecified;
}

Status Status::WithReason(StatusReason reason) const {
  Status out = *this;
  if (!out.ok()) out.reason_ = reason;
  return out;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_).WithReason(reason_);
}

namespace internal {
void CheckFailed(const char* file, int line, const char* condition,
                 std::string_view message) {
  std::fprintf(stderr, "pipewright: internal check failed at %s:%d: %s%s%.*s\n"
               "This is a bug in pipewright; please report it with the command you ran.\n",
               file, line, condition, message.empty() ? "" : ": ",
               static_cast<int>(message.size()), message.data());
  std::abort();
}
}  // namespace internal

}  // namespace pw
