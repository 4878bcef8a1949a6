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
  double params = span.num_blocks * static_cast<double>(BlockParameterCount(m));
  if (span.has_embedding) params += static_cast<double>(EmbeddingParameterCount(m));
  if (span.has_head) params += static_cast<double>(HeadParameterCount(m));
  // A tied head apart from the embedding holds its own copy of it (model/gpt.h).
  if (span.has_head && !span.has_embedding && m.tie_embeddings) params += static_cast<double>(m.vocab_size) * m.d_model;
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
