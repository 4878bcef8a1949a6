#include "comm/grid.h"

namespace pw {

Result<GridLayout> GridLayout::Create(int pp, int dp, int world_size) {
  if (pp < 1 || dp < 1) {
    return Status::InvalidArgument("grid pp=" + std::to_string(pp) + " x dp=" +
                                   std::to_string(dp) + ": both must be at least 1");
  }
  if (static_cast<long long>(pp) * dp != world_size) {
    return Status::InvalidArgument(
        "grid pp=" + std::to_string(pp) + " x dp=" + std::to_string(dp) + " needs " +
        std::to_string(static_cast<long long>(pp) * dp) + " ranks but the world has " +
        std::to_string(world_size) + "; choose pp and dp with pp * dp = " +
        std::to_string(world_size));
  }
  return GridLayout(pp, dp);
}

int GridLayout::WorldRank(int pp_rank, int dp_rank) const {
  PW_CHECK(pp_rank >= 0 && pp_rank < pp_ && dp_rank >= 0 && dp_rank < dp_,
           "grid coordinates out of range");
  return dp_rank * pp_ + pp_rank;
}

int GridLayout::PipelineRank(int world_rank) const {
  PW_CHECK(world_rank >= 0 && world_rank < world_size(), "world rank out of range");
  return world_rank % pp_;
}

int GridLayout::DataRank(int world_rank) const {
  PW_CHECK(world_rank >= 0 && world_rank < world_size(), "world rank out of range");
  return world_rank / pp_;
}

std::vector<int> GridLayout::PipelineMembers(int dp_rank) const {
  std::vector<int> members;
  for (int p = 0; p < pp_; ++p) members.push_back(WorldRank(p, dp_rank));
  return members;
}

std::vector<int> GridLayout::DataParallelMembers(int pp_rank) const {
  std::vector<int> members;
  for (int d = 0; d < dp_; ++d) members.push_back(WorldRank(pp_rank, d));
  return members;
}

std::string GridLayout::ToString() const {
  return "pp=" + std::to_string(pp_) + " x dp=" + std::to_string(dp_) +
         " (world rank = dp_rank * " + std::to_string(pp_) + " + pp_rank)";
}

}  // namespace pw
