// SplitStageCostsIntoLayers: per-block costs of a GPT-style model from the
// measured costs of the stages it was split into, so that a training
// profile describes the model and not only the split it was measured on —
// `plan` can then move stage boundaries between blocks and try other stage
// counts (docs/cost-model.md).
//
// Each stage's time is shared among the pieces it holds (the embedding, its
// blocks, the head) in proportion to their estimated forward FLOPs
// (model/partitioner.h EstimateLayerCosts); backward FLOPs are about twice
// forward for every piece, so the same shares serve F, B, I and W. Layer 0
// carries the embedding and the last layer the head: a split between
// blocks never separates them from their neighbour block, which is also
// how the runtime places them (the first stage holds the embedding, the
// last the head).
//
// Pure, no LibTorch; may be called concurrently.
#pragma once

#include <vector>

#include "core/status.h"
#include "model/partitioner.h"
#include "sim/cost_model.h"

namespace pw::search {

// `stages`: one measured entry per stage of `partition` (F, and B or I and
// W); `flops`: the model's per-piece estimates, one block entry per model
// block. Returns one entry per block: times are the block's shares (plus
// the embedding's on layer 0 and the head's on the last), with F always and
// B, I, W where a stage gave them (unset ones filled by the cost model's
// rules first); activation_bytes shared likewise; output_bytes and
// freed_by_input those of the block's stage. InvalidArgument when the
// counts disagree, a stage's blocks fall outside the model, or a time is
// negative.
Result<std::vector<StageCost>> SplitStageCostsIntoLayers(const std::vector<StageCost>& stages,
                                                         const ModelPartition& partition,
                                                         const LayerCosts& flops);

}  // namespace pw::search
