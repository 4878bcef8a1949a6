#include "os/environment.h"

#include <cstdlib>

namespace pw {

std::optional<std::string> EnvironmentVariable(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

void SetEnvironmentVariable(const std::string& name, const std::string& value) {
  ::setenv(name.c_str(), value.c_str(), /*overwrite=*/1);
}

void UnsetEnvironmentVariable(const std::string& name) { ::unsetenv(name.c_str()); }

}  // namespace pw
