#include "viz/file_output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace pw {
namespace {

namespace fs = std::filesystem;

// The directory a path would be created in ("." for a bare file name).
fs::path ParentDir(const fs::path& path) {
  fs::path parent = path.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  if (path.empty()) return Status::InvalidArgument("output path is empty; give a file name");
  const fs::path target(path);
  const fs::path dir = ParentDir(target);
  std::error_code ec;
  // Check up front so the message says which directory is missing rather
  // than a bare "No such file or directory" about the .tmp file.
  if (!fs::exists(dir, ec)) {
    return Status::IoError("cannot write '" + path + "': directory '" + dir.string() +
                           "' does not exist; create it first or choose another path");
  }
  if (!fs::is_directory(dir, ec)) {
    return Status::IoError("cannot write '" + path + "': '" + dir.string() + "' is not a directory");
  }
  if (fs::is_directory(target, ec)) {
    return Status::IoError("cannot write '" + path + "': it is a directory; give a file name");
  }

  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return Status::IoError("cannot create '" + tmp + "': " + std::strerror(errno));
  }
  const size_t written = std::fwrite(contents.data(), 1, contents.size(), f);
  const int write_errno = errno;
  const bool write_ok = written == contents.size();
  const bool close_ok = std::fclose(f) == 0;
  if (!write_ok || !close_ok) {
    const int err = write_ok ? errno : write_errno;
    std::remove(tmp.c_str());
    return Status::IoError("writing '" + tmp + "' failed after " + std::to_string(written) + " of " +
                           std::to_string(contents.size()) + " bytes: " + std::strerror(err) +
                           " (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return Status::IoError("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(err));
  }
  return Status::Ok();
}

}  // namespace pw
