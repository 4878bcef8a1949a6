#include "cli/launch_job.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "comm/launcher.h"
#include "os/process.h"
#include "os/atomic_file.h"
#include "viz/progress.h"

namespace pw::cli {

Status CheckRanksMatchLauncher(bool ranks_given, int ranks, const WorldInfo& world) {
  if (!ranks_given || ranks == world.world_size) return Status::Ok();
  return Status::InvalidArgument("--ranks " + std::to_string(ranks) + " but " + world.source + " started " +
                                 std::to_string(world.world_size) +
                                 " ranks; drop --ranks under a launcher or make the two equal");
}

Status LaunchJobRanks(const std::string& command, const std::function<std::string(bool)>& job_json, int ranks,
                      int timeout_s, int straggler_s, const std::vector<std::pair<std::string, std::string>>& env) {
  const bool terminal = IsTerminal(stdout);
  const std::string job_file = std::filesystem::temp_directory_path() /
                               ("pipewright-" + command + "-" + std::to_string(ProcessId()) + ".json");
  PW_RETURN_IF_ERROR(WriteFile(job_file, job_json(terminal), Durability::kAtomic));
  struct Remover {
    std::string path;
    ~Remover() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  } remover{job_file};

  LaunchOptions options;
  options.threads_per_rank = 1;
  options.env = env;
  if (timeout_s > 0) options.timeout = std::chrono::seconds(timeout_s);
  if (straggler_s > 0) options.straggler_timeout = options.stopped_timeout = std::chrono::seconds(straggler_s);
  ProgressPrinter progress(stdout, terminal ? ProgressMode::kInPlace : ProgressMode::kPlain);
  options.sink = [&progress](int, OutputStream stream, const std::string& line) {
    progress.RelayLine(line, stream == OutputStream::kStdout ? stdout : stderr);
  };
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  Status status = LaunchLocalRanks({self, command, "--worker", "--job", job_file}, ranks, options);
  progress.Finish();
  return status;
}

}  // namespace pw::cli
