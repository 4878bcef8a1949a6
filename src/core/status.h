// Status and Result<T>: how pipewright reports failures caused by user input
// or the outside world (leveldb's habit). Broken internal invariants use
// PW_CHECK (core/check.h) instead.
//
// A Status is cheap to copy when OK (no allocation). Messages should say
// what went wrong, where (file:line:col, rank, action) and how to fix it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "core/check.h"

namespace pw {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,   // the caller's input is malformed or inconsistent
  kNotFound,          // a named thing (file, schedule, key) does not exist
  kFailedPrecondition,// input is well-formed but violates a rule (e.g. m % p)
  kDeadlock,          // a schedule cannot make progress
  kIoError,           // reading or writing a file failed
  kInternal,          // a bug in pipewright; please report
};

// Returns a short stable name such as "InvalidArgument".
std::string_view StatusCodeName(StatusCode code);

// Why a failure happened, for the few callers that act on it (which rank
// caused a job's failure, which hint a message gets). The message is for
// people; code decides on the reason, never on the message's wording.
enum class StatusReason : uint8_t {
  kUnspecified = 0,
  kPeerTimedOut,    // a wait for a peer ran to its deadline
  kPeerLost,        // a peer (or the job's store) closed its connection
  kCostsDoNotFit,   // a schedule's compile costs do not fit its shape
};

// Returns a short stable name such as "peer-timed-out" ("unspecified").
std::string_view StatusReasonName(StatusReason reason);

// The reason whose StatusReasonName is `name`; kUnspecified for any other.
StatusReason StatusReasonFromName(std::string_view name);

class Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
  static Status Deadlock(std::string m) { return {StatusCode::kDeadlock, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  StatusReason reason() const { return reason_; }

  // Returns a copy with `reason` set; OK stays OK (and has no reason).
  Status WithReason(StatusReason reason) const;

  // "InvalidArgument: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>" (same code and
  // reason); OK stays OK.
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  StatusReason reason_ = StatusReason::kUnspecified;
  std::string message_;
};

// Either a value or a non-OK Status. Accessing value() of an error is a bug
// (PW_CHECK fails), so callers test ok() first or use PW_ASSIGN_OR_RETURN.
template <typename T>
class Result {
 public:
  Result(T value) : data_(std::move(value)) {}                   // NOLINT
  Result(Status status) : data_(std::move(status)) {             // NOLINT
    PW_CHECK(!std::get<Status>(data_).ok(), "Result built from an OK Status");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(data_);
  }

  T& value() & { CheckOk(); return std::get<T>(data_); }
  const T& value() const& { CheckOk(); return std::get<T>(data_); }
  T&& value() && { CheckOk(); return std::get<T>(std::move(data_)); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void CheckOk() const {
    PW_CHECK(ok(), "value() on an error Result: " + std::get<Status>(data_).ToString());
  }
  std::variant<T, Status> data_;
};

}  // namespace pw

#define PW_CONCAT_INNER_(a, b) a##b
#define PW_CONCAT_(a, b) PW_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function if `expr` is not OK.
#define PW_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::pw::Status pw_status_ = (expr);            \
    if (!pw_status_.ok()) return pw_status_;     \
  } while (0)

// `lhs` = value of the Result `expr`, or returns its Status.
#define PW_ASSIGN_OR_RETURN(lhs, expr) \
  PW_ASSIGN_OR_RETURN_IMPL_(PW_CONCAT_(pw_result_, __LINE__), lhs, expr)
#define PW_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
