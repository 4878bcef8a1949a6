#include "search/layer_split.h"

#include <string>
#include <utility>

#include "search/model_profile.h"

namespace pw::search {

Result<std::vector<StageCost>> SplitStageCostsIntoLayers(const std::vector<StageCost>& stages,
                                                         const ModelPartition& partition,
                                                         const LayerCosts& flops) {
  const int num_layers = static_cast<int>(flops.blocks.size());
  if (num_layers < 1) return Status::InvalidArgument("the model has no blocks to share stage costs among");
  if (static_cast<int>(stages.size()) != partition.num_stages()) {
    return Status::InvalidArgument("per-layer costs need one measured entry per stage: " +
                                   std::to_string(stages.size()) + " entries for " +
                                   std::to_string(partition.num_stages()) + " stages");
  }
  bool any_b = false, any_iw = false;
  for (const StageCost& c : stages) {
    any_b = any_b || c.backward.has_value();
    any_iw = any_iw || (c.backward_input.has_value() && c.backward_weight.has_value());
  }
  PW_ASSIGN_OR_RETURN(std::vector<StageCost> resolved, ResolveCostEntries(stages));

  // Recomputation's own times (a profile of a run that recomputes) are
  // shared like the others; a layer has them when a stage it shares in
  // has them (the plain times stand in for a stage without).
  struct Sum {
    double f = 0, b = 0, i = 0, w = 0, act = 0;
    double re = 0, b_after = 0, i_after = 0, w_after = 0;
    bool any_re = false, any_after = false;
  };
  std::vector<Sum> sums(num_layers);
  std::vector<StageCost> out(num_layers);
  for (int s = 0; s < partition.num_stages(); ++s) {
    const StageSpan& span = partition.stages[s];
    if (span.first_block < 0 || span.num_blocks < 0 || span.first_block + span.num_blocks > num_layers) {
      return Status::InvalidArgument("stage " + std::to_string(s) + " holds blocks " +
                                     std::to_string(span.first_block) + ".." +
                                     std::to_string(span.first_block + span.num_blocks - 1) + " of a model with " +
                                     std::to_string(num_layers));
    }
    // (layer, estimated forward FLOPs) of every piece on the stage.
    std::vector<std::pair<int, double>> pieces;
    if (span.has_embedding) pieces.emplace_back(0, flops.embedding);
    for (int b = span.first_block; b < span.first_block + span.num_blocks; ++b) pieces.emplace_back(b, flops.blocks[b]);
    if (span.has_head) pieces.emplace_back(num_layers - 1, flops.head);
    double total = 0;
    for (const auto& [layer, weight] : pieces) total += weight;
    const StageCost& c = resolved[s];
    for (const auto& [layer, weight] : pieces) {
      // Equal shares when the estimate says nothing (all zero).
      const double share = total > 0 ? weight / total : 1.0 / static_cast<double>(pieces.size());
      Sum& sum = sums[layer];
      sum.f += share * *c.forward;
      sum.b += share * *c.backward;
      sum.i += share * *c.backward_input;
      sum.w += share * *c.backward_weight;
      sum.act += share * c.activation_bytes;
      sum.re += share * c.recompute.value_or(*c.forward);
      sum.b_after += share * c.backward_after_recompute.value_or(*c.backward);
      sum.i_after += share * c.backward_input_after_recompute.value_or(*c.backward_input);
      sum.w_after += share * c.backward_weight_after_recompute.value_or(*c.backward_weight);
      sum.any_re = sum.any_re || c.recompute.has_value();
      sum.any_after = sum.any_after || c.HasBackwardAfterRecompute();
    }
    for (int b = span.first_block; b < span.first_block + span.num_blocks; ++b) {
      out[b].output_bytes = c.output_bytes;
      out[b].freed_by_input = c.freed_by_input;
    }
  }
  for (int l = 0; l < num_layers; ++l) {
    out[l].forward = sums[l].f;
    if (any_b) out[l].backward = sums[l].b;
    if (any_iw) {
      out[l].backward_input = sums[l].i;
      out[l].backward_weight = sums[l].w;
    }
    out[l].activation_bytes = sums[l].act;
    if (sums[l].any_re) out[l].recompute = sums[l].re;
    if (!sums[l].any_after) continue;
    if (any_b) out[l].backward_after_recompute = sums[l].b_after;
    if (any_iw) {
      out[l].backward_input_after_recompute = sums[l].i_after;
      out[l].backward_weight_after_recompute = sums[l].w_after;
    }
  }
  return out;
}

}  // namespace pw::search
