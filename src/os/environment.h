// The process environment: the seam for every getenv/setenv above os/.
//
// Thread-safety: reads may run on any thread as long as no thread sets or
// unsets a variable meanwhile (POSIX's rule for the environment).
#pragma once

#include <optional>
#include <string>

namespace pw {

// The value of environment variable `name`, or nullopt when it is unset.
std::optional<std::string> EnvironmentVariable(const std::string& name);

// Sets (overwriting) or removes `name` in this process's environment, which
// children and a re-exec'd image inherit. Call before threads start.
void SetEnvironmentVariable(const std::string& name, const std::string& value);
void UnsetEnvironmentVariable(const std::string& name);

}  // namespace pw
