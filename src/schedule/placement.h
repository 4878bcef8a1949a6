// Placement: which rank owns each virtual stage.
//
// Stages are numbered in model order (stage s feeds stage s+1). Common shapes:
//   sequential   p stages, stage r on rank r
//   interleaved  v*p stages, stage s on rank s % p (Megatron's looped layout)
//   v-shape      2p stages, rank r owns stages r and 2p-1-r (ZB-V, DualPipe-V)
// Any explicit stage -> rank list is allowed as long as every rank owns at
// least one stage.
#pragma once

#include <string>
#include <vector>

#include "core/ids.h"
#include "core/status.h"

namespace pw {

class Placement {
 public:
  Placement() = default;

  static Result<Placement> Sequential(int num_ranks);
  static Result<Placement> Interleaved(int num_ranks, int chunks_per_rank);
  static Result<Placement> VShape(int num_ranks);
  // Fails unless every entry is in [0, num_ranks) and every rank owns a stage.
  static Result<Placement> FromStageToRank(std::vector<RankId> stage_to_rank, int num_ranks);

  int num_ranks() const { return static_cast<int>(stages_of_rank_.size()); }
  int num_stages() const { return static_cast<int>(stage_to_rank_.size()); }
  RankId RankOf(StageId stage) const { return stage_to_rank_[stage]; }
  // Stages owned by `rank`, ascending.
  const std::vector<StageId>& StagesOf(RankId rank) const { return stages_of_rank_[rank]; }
  const std::vector<RankId>& stage_to_rank() const { return stage_to_rank_; }

  // "sequential", "interleaved", "v-shape" or "custom" — for display only.
  std::string Describe() const;

  friend bool operator==(const Placement& a, const Placement& b) {
    return a.stage_to_rank_ == b.stage_to_rank_ && a.num_ranks() == b.num_ranks();
  }

 private:
  std::vector<RankId> stage_to_rank_;
  std::vector<std::vector<StageId>> stages_of_rank_;
};

}  // namespace pw
