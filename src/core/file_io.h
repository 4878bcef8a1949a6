// Reading whole files with errors that name the path and the cause.
#pragma once

#include <string>

#include "core/status.h"

namespace pw {

// The bytes of `path`. NotFound when it does not exist, IoError when it
// cannot be read (a directory, no permission). Blocks.
Result<std::string> ReadTextFile(const std::string& path);

}  // namespace pw
