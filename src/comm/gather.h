// How ranks report to one another: every member's string on every member
// of a group (per-rank reports, lane names, summaries as JSON text). The one
// way ranks of a job hand results to world rank 0, which prints them.
//
// Thread-safety: a collective on `group`: every member calls it, from the
// thread that runs the group's other collectives. Blocks until all have.
// Failure: the group's Status (a peer that died, a timeout).
#pragma once

#include <string>
#include <vector>

#include "comm/comm_group.h"
#include "core/status.h"

namespace pw {

// Index = group rank. Bytes travel exactly (any content, any length).
Result<std::vector<std::string>> GatherStrings(CommGroup& group, const std::string& mine);

}  // namespace pw
