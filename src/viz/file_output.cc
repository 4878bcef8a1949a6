#include "viz/file_output.h"

#include <filesystem>
#include <system_error>

#include "os/atomic_file.h"

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

  // Pictures and reports need no fsync: losing one to a crash costs a rerun,
  // not a training run (checkpoints use AtomicFile{durable}).
  AtomicFile file(path, /*durable=*/false);
  PW_RETURN_IF_ERROR(file.Open());
  PW_RETURN_IF_ERROR(file.Write(contents));
  return file.Commit();
}

}  // namespace pw
