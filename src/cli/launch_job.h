// How `train` and `infer` start their local ranks: the job (src/job/) goes
// to a temporary JSON file, and this binary is started once per rank as
// `pipewright COMMAND --worker --job FILE` (comm/launcher.h). On a terminal
// the ranks relay a progress line that is drawn here in place.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "comm/world_info.h"
#include "core/status.h"

namespace pw::cli {

// `job_json(relay_progress)` returns the job file's text; relay_progress
// says whether stdout is a terminal (the ranks then relay their progress
// line). Blocks until every rank has ended; the job file is removed
// afterwards. `timeout_s` > 0 stops the job after that many seconds;
// `straggler_s` > 0 stops it when a rank is still running that long after
// another rank finished, or stays stopped (SIGSTOP) that long (the job's
// collective timeout). `env` adds
// variables to every rank's environment.
// Failure: the launcher's Status (which rank failed, and how), or IoError
// for the job file.
// Under an external launcher (torchrun & co.) its world decides the number
// of ranks: InvalidArgument when --ranks was given on the command line
// (`ranks_given`) and differs, which would otherwise pass unnoticed.
Status CheckRanksMatchLauncher(bool ranks_given, int ranks, const WorldInfo& world);

Status LaunchJobRanks(const std::string& command, const std::function<std::string(bool)>& job_json, int ranks,
                      int timeout_s, int straggler_s, const std::vector<std::pair<std::string, std::string>>& env = {});

}  // namespace pw::cli
