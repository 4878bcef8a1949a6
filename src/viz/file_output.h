// Writing a rendered picture or report to a file without leaving a torn
// file behind: the text goes to "<path>.tmp" first and is renamed over
// <path> only once it is complete (os/AtomicFile, not durable). Used by the
// CLI for --svg, --trace, --out.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace pw {

// Writes `contents` to `path`, replacing any existing file, atomically on
// POSIX file systems (readers see the old file or the whole new one).
// Blocks on file I/O. Safe to call concurrently for different paths; two
// concurrent writers of the same path race on "<path>.tmp".
// Returns IoError naming the path and the reason when the directory does not
// exist, the path is a directory, or writing/renaming fails; the temporary
// file is removed on failure.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

}  // namespace pw
