// The status record: how a rank tells the process that launched it why it
// failed, in one line of its stderr that code reads instead of the wording
// of the error message above it.
//
//   pipewright-status: code=IoError reason=peer-timed-out
//
// A rank writes the record only when its launcher asked for it (the
// environment variable kStatusRecordEnv is "1": comm/launcher.h sets it),
// so a rank started by torchrun, mpirun or Slurm prints no extra line. The
// launcher keeps the record out of the lines it shows.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace pw {

inline constexpr const char* kStatusRecordEnv = "PIPEWRIGHT_STATUS_RECORD";

struct StatusRecord {
  StatusCode code = StatusCode::kInternal;
  StatusReason reason = StatusReason::kUnspecified;
};

// The record line of a failed `status`, without a newline. `status` must not
// be OK.
std::string StatusRecordLine(const Status& status);

// The record in `line` when it is a record line (an unknown code reads as
// kInternal, an unknown reason as kUnspecified, so a newer rank's record
// still counts as one); nullopt for any other line.
std::optional<StatusRecord> ParseStatusRecordLine(std::string_view line);

// os/process.h WriteStatusRecordIfAsked writes this process's record.

}  // namespace pw
