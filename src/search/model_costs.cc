#include "search/model_costs.h"

#include "core/check.h"

namespace pw {

double EstimateActivationBytes(const ModelConfig& m, const StageSpan& span, int microbatch_size) {
  const double s = m.seq_len, b = microbatch_size, h = m.d_model, a = m.n_heads;
  double bytes = span.num_blocks * 2.0 * s * b * h * (34.0 + 5.0 * a * s / h);
  if (span.has_embedding) bytes += 4.0 * s * b * h;
  if (span.has_head) bytes += 4.0 * 2.0 * s * b * m.vocab_size;
  return bytes;
}

double EstimateStageParameters(const ModelConfig& m, const StageSpan& span) {
  const double d = m.d_model, r = m.mlp_ratio, bias = m.bias ? 1 : 0;
  // Two LayerNorms (4d), qkv, attention output, MLP up and down; biases on
  // the four Linear layers (3d + d + rd + d).
  const double per_block = (4 + 2 * r) * d * d + 4 * d + bias * (5 + r) * d;
  double params = span.num_blocks * per_block;
  if (span.has_embedding) params += (m.vocab_size + m.seq_len) * d;
  if (span.has_head) params += 2 * d + d * m.vocab_size;
  return params;
}

CostModel EstimateCostModel(const ModelConfig& model, const ModelPartition& partition,
                            int microbatch_size, const Placement& placement) {
  PW_CHECK(placement.num_stages() == partition.num_stages(),
           "EstimateCostModel: placement and partition have different stage counts");
  CostModel costs;
  costs.stages.clear();
  costs.static_bytes.assign(placement.num_ranks(), 0.0);
  for (const StageSpan& span : partition.stages) {
    StageCost c;
    c.forward = span.cost;
    c.backward = 2 * span.cost;
    c.backward_input = span.cost;
    c.backward_weight = span.cost;
    c.activation_bytes = EstimateActivationBytes(model, span, microbatch_size);
    costs.stages.push_back(c);
    costs.static_bytes[placement.RankOf(span.stage)] += 16.0 * EstimateStageParameters(model, span);
  }
  return costs;
}

}  // namespace pw
