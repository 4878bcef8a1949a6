// EstimateCostModel: the simulator's costs for a GPT-style model split by
// the partitioner, estimated from the model's shape alone, before anything
// is measured. One estimate serves every planner that needs one:
// `train --schedule auto` (search/auto_schedule.h), the trainer's predicted
// bubbles and the harvest manager's first per-rank idle and memory figures.
//
// The model:
//   - time: each stage's forward costs its partitioner estimate (StageSpan::
//     cost, forward FLOPs per sequence; relative units, only ratios matter);
//     B = 2F, I = W = F. Communication is free (the CostModel's defaults).
//   - activation_bytes: one microbatch held on a stage from F to its
//     backward: Megatron's estimate for fp16, s·b·h·(34 + 5·a·s/h) bytes per
//     block, doubled for float32; the embedding adds its output (4·s·b·h);
//     the head holds the logits and their softmax (2·s·b·V floats).
//   - static_bytes, one entry per rank: 16 bytes per parameter of the
//     rank's stages (float32 parameter, gradient and two AdamW moments).
//
// Pure, no LibTorch; may be called concurrently.
#pragma once

#include "model/model_config.h"
#include "model/partitioner.h"
#include "schedule/placement.h"
#include "sim/cost_model.h"

namespace pw {

// Activation bytes one microbatch of `microbatch_size` sequences holds on
// `span` (the rule above).
double EstimateActivationBytes(const ModelConfig& model, const StageSpan& span, int microbatch_size);

// Trainable parameters of `span`: its blocks, plus the embedding tables on
// the first stage and the final LayerNorm and LM head on the last. Summed
// over a partition's stages it equals CountParameters(model).
double EstimateStageParameters(const ModelConfig& model, const StageSpan& span);

// One StageCost per stage of `partition` (forward, backward, I, W and
// activation_bytes set) and one static_bytes entry per rank of `placement`.
// Not resolved: call CostModel::Resolve with the schedule before simulating.
// `placement` must have as many stages as `partition` (PW_CHECK).
CostModel EstimateCostModel(const ModelConfig& model, const ModelPartition& partition,
                            int microbatch_size, const Placement& placement);

}  // namespace pw
