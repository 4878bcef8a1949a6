// Internal: what a CommGroup holds. Included by comm_group.cc and
// process_groups.cc only (it pulls in c10d headers).
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "comm/comm_group.h"

namespace pw {

struct CommGroup::Impl {
  std::string name;
  c10::intrusive_ptr<c10d::ProcessGroup> backend;
  std::vector<int> world_ranks;  // group rank -> world rank
  std::chrono::milliseconds timeout{0};
  bool exit_after_failure = false;  // ProcessGroupsOptions::exit_after_failure
};

}  // namespace pw
