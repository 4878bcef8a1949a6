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

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
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
