#include "core/file_io.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace pw {

Result<std::string> ReadTextFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::NotFound("file '" + path + "' does not exist");
  if (std::filesystem::is_directory(path, ec)) {
    return Status::IoError("'" + path + "' is a directory; give a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError("cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Status::IoError("error while reading '" + path + "'");
  return buf.str();
}

}  // namespace pw
