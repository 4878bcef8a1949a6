// PW_CHECK: invariants that only a bug in pipewright can break. A failed
// check prints file:line and the message to stderr and aborts. Never use it
// for user input; return a Status instead (core/status.h).
#pragma once

#include <string>
#include <string_view>

namespace pw::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              std::string_view message);
}  // namespace pw::internal

#define PW_CHECK(cond, ...)                                                  \
  do {                                                                       \
    if (!(cond)) [[unlikely]] {                                              \
      ::pw::internal::CheckFailed(__FILE__, __LINE__, #cond,                 \
                                  ::std::string(__VA_ARGS__));               \
    }                                                                        \
  } while (0)
