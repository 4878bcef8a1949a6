#include "schedule/placement.h"

namespace pw {

Result<Placement> Placement::FromStageToRank(std::vector<RankId> stage_to_rank, int num_ranks) {
  if (num_ranks < 1) {
    return Status::InvalidArgument("number of ranks must be at least 1, got " + std::to_string(num_ranks));
  }
  Placement p;
  p.stages_of_rank_.assign(num_ranks, {});
  for (size_t s = 0; s < stage_to_rank.size(); ++s) {
    RankId r = stage_to_rank[s];
    if (r < 0 || r >= num_ranks) {
      return Status::InvalidArgument("placement: stage " + std::to_string(s) + " is on rank " +
                                     std::to_string(r) + ", outside 0.." + std::to_string(num_ranks - 1));
    }
    p.stages_of_rank_[r].push_back(static_cast<StageId>(s));
  }
  for (int r = 0; r < num_ranks; ++r) {
    if (p.stages_of_rank_[r].empty()) {
      return Status::InvalidArgument("placement: rank " + std::to_string(r) +
                                     " owns no stage; every rank needs at least one");
    }
  }
  p.stage_to_rank_ = std::move(stage_to_rank);
  return p;
}

Result<Placement> Placement::Sequential(int num_ranks) { return Interleaved(num_ranks, 1); }

Result<Placement> Placement::Interleaved(int num_ranks, int chunks_per_rank) {
  if (num_ranks < 1) return Status::InvalidArgument("--ranks must be at least 1, got " + std::to_string(num_ranks));
  if (chunks_per_rank < 1) {
    return Status::InvalidArgument("--chunks must be at least 1, got " + std::to_string(chunks_per_rank));
  }
  std::vector<RankId> s2r(static_cast<size_t>(num_ranks) * chunks_per_rank);
  for (size_t s = 0; s < s2r.size(); ++s) s2r[s] = static_cast<RankId>(s % num_ranks);
  return FromStageToRank(std::move(s2r), num_ranks);
}

Result<Placement> Placement::VShape(int num_ranks) {
  if (num_ranks < 1) return Status::InvalidArgument("--ranks must be at least 1, got " + std::to_string(num_ranks));
  std::vector<RankId> s2r(2 * static_cast<size_t>(num_ranks));
  for (int r = 0; r < num_ranks; ++r) {
    s2r[r] = r;
    s2r[2 * num_ranks - 1 - r] = r;
  }
  return FromStageToRank(std::move(s2r), num_ranks);
}

std::string Placement::Describe() const {
  const int p = num_ranks();
  const int n = num_stages();
  bool interleaved = n % p == 0;
  for (int s = 0; interleaved && s < n; ++s) interleaved = stage_to_rank_[s] == s % p;
  if (interleaved) return n == p ? "sequential" : "interleaved";
  bool vshape = n == 2 * p;
  for (int r = 0; vshape && r < p; ++r) vshape = stage_to_rank_[r] == r && stage_to_rank_[n - 1 - r] == r;
  return vshape ? "v-shape" : "custom";
}

}  // namespace pw
