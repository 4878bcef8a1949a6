// Partitioner: splits the GPT decoder into S virtual stages of contiguous
// layers. The model is a sequence of units — the embedding, the n_layers
// blocks, the head (final LayerNorm + LM head + loss) — and every stage holds
// a contiguous, non-empty run of them: stage 0 always holds the embedding and
// the last stage the head.
//
// Balanced (the default) minimises the largest stage's estimated forward
// FLOPs, counting the embedding and the LM head; explicit splits give the
// number of blocks per stage ("2,3,3", uneven allowed). This file uses no
// LibTorch: planners and the simulator may call it.
//
// Thread-safety: every function is pure and may be called concurrently.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.h"
#include "core/status.h"
#include "model/model_config.h"

namespace pw {

// Estimated forward FLOPs of each unit for one sequence of seq_len tokens
// (a multiply-add counts 2). Blocks: the four GEMM groups plus the two
// attention matmuls (2·T²·d each); embedding: the lookup and position add
// (2·T·d, tiny but not zero); head: the LM head GEMM plus the softmax and
// cross-entropy over the vocabulary (2·T·d·V + 3·T·V). Backward costs ≈ 2×
// forward for every unit, so forward FLOPs rank stages the same way.
struct LayerCosts {
  double embedding = 0;
  std::vector<double> blocks;  // n_layers entries
  double head = 0;
};
LayerCosts EstimateLayerCosts(const ModelConfig& config);

// One virtual stage: blocks [first_block, first_block + num_blocks).
struct StageSpan {
  StageId stage = 0;
  int first_block = 0;
  int num_blocks = 0;
  bool has_embedding = false;  // stage 0
  bool has_head = false;       // the last stage
  double cost = 0;             // estimated forward FLOPs per sequence
};

struct ModelPartition {
  std::vector<StageSpan> stages;

  int num_stages() const { return static_cast<int>(stages.size()); }
  // The largest stage cost over the mean stage cost (1 = perfectly balanced).
  double Imbalance() const;
  // Blocks per stage as "2,3,3" (what PartitionModel reads back).
  std::string BlocksPerStageString() const;
};

// Parses "2,3,3" (spaces allowed). InvalidArgument for an empty list, a
// non-integer or a negative entry; the message quotes the offending entry.
Result<std::vector<int>> ParseLayersPerStage(std::string_view text);

// Minimises the largest stage cost over all contiguous splits into
// `num_stages` non-empty stages (ties: the smaller sum of squared stage
// costs, then the earlier boundary). FailedPrecondition when num_stages < 1
// or num_stages > n_layers + 2 (each stage needs at least one unit).
Result<ModelPartition> PartitionBalanced(const ModelConfig& config, int num_stages);

// Uses the given number of blocks per stage. FailedPrecondition when an
// entry is negative, the entries do not sum to n_layers, or a stage other
// than the first or last would be empty (the first holds the embedding and
// the last the head, so they may hold zero blocks).
Result<ModelPartition> PartitionExplicit(const ModelConfig& config,
                                         std::span<const int> blocks_per_stage);

// `layers_per_stage` empty, "balanced" or "auto": PartitionBalanced (`train`
// resolves "auto" into a list from measured costs before the ranks start,
// runtime/trainer.h; anywhere else it means the estimate); otherwise a list
// for ParseLayersPerStage whose length must equal num_stages (the error says
// both numbers), then PartitionExplicit.
Result<ModelPartition> PartitionModel(const ModelConfig& config, int num_stages,
                                      std::string_view layers_per_stage);

}  // namespace pw
