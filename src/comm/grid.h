// The pp x dp grid of ranks: which world rank runs which pipeline stage rank
// of which data-parallel replica.
//
// Layout (pipeline-major): consecutive world ranks form one pipeline.
//
//   world rank = dp_rank * pp + pp_rank
//
//   pp = 4, dp = 2:   pipeline 0 (dp_rank 0) = ranks 0 1 2 3
//                     pipeline 1 (dp_rank 1) = ranks 4 5 6 7
//                     dp group of pp_rank 1  = ranks 1 5
//
// Why this way round: pipeline p2p sits on the critical path of every
// microbatch and is latency-bound, so its neighbours should be neighbours in
// rank order (same machine when a machine holds a whole pipeline); the DP
// all-reduce moves more bytes but once per step, and overlaps with the last
// backward passes. With dp = 1 the world rank is the pipeline rank, which is
// the RankId of the schedule IR; with pp = 1 it is the data-parallel rank.
//
// Pure value type: no LibTorch, never blocks, safe to share between threads.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace pw {

class GridLayout {
 public:
  // InvalidArgument unless pp >= 1, dp >= 1 and pp * dp == world_size.
  static Result<GridLayout> Create(int pp, int dp, int world_size);

  int pp() const { return pp_; }
  int dp() const { return dp_; }
  int world_size() const { return pp_ * dp_; }

  // Mapping; arguments out of range are bugs (PW_CHECK).
  int WorldRank(int pp_rank, int dp_rank) const;
  int PipelineRank(int world_rank) const;  // pp_rank, 0..pp-1
  int DataRank(int world_rank) const;      // dp_rank, 0..dp-1

  // World ranks of the pipeline with this dp_rank, in stage-rank order.
  std::vector<int> PipelineMembers(int dp_rank) const;
  // World ranks of the data-parallel group of this pp_rank, in dp_rank order.
  std::vector<int> DataParallelMembers(int pp_rank) const;

  // "pp=4 x dp=2 (world rank = dp_rank * 4 + pp_rank)".
  std::string ToString() const;

 private:
  GridLayout(int pp, int dp) : pp_(pp), dp_(dp) {}
  int pp_;
  int dp_;
};

}  // namespace pw
