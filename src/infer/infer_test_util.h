// Shared by the infer/ tests (and harvest's infer task test): small
// byte-level model configs, and the single-process oracle every pool mode
// is compared with. init_std is large (0.2) so that random-init logits are
// far from ties and greedy decoding is a sharp test of equality.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/check.h"
#include "infer/engine.h"
#include "infer/model_weights.h"
#include "infer/sampling.h"
#include "model/gpt.h"
#include "model/model_config.h"

namespace pw {

inline ModelConfig SmallTestConfig(int d_model, int n_layers, int seq_len, bool bias = true) {
  ModelConfig c;
  c.vocab_size = 256;
  c.d_model = d_model;
  c.n_layers = n_layers;
  c.n_heads = 4;
  c.seq_len = seq_len;
  c.bias = bias;
  c.init_std = 0.2;
  return c;
}

// Generates `request` greedily by recomputing the full-sequence forward
// (model/gpt.h GptSegment::ForwardLogits) for each token: no KV cache, no
// batching, no pool — the reference the engine must equal.
inline std::vector<int64_t> ReferenceGreedy(const WeightSource& source, const GenerationRequest& request) {
  Result<std::unique_ptr<GptSegment>> loaded = LoadWholeModel(source);
  PW_CHECK(loaded.ok(), "ReferenceGreedy: " + loaded.status().ToString());
  const GptSegment& model = **loaded;
  const int64_t seq_len = model.config().seq_len;
  c10::NoGradGuard no_grad;
  std::vector<int64_t> sequence = request.prompt, out;
  if (sequence.empty() || static_cast<int64_t>(sequence.size()) > seq_len) return out;
  while (static_cast<int64_t>(out.size()) < request.max_new_tokens && static_cast<int64_t>(sequence.size()) <= seq_len) {
    at::Tensor input = at::tensor(sequence, at::kLong).view({1, -1});
    at::Tensor logits = model.ForwardLogits(input, ForwardContext{});
    const int64_t token = GreedyToken(logits[0][logits.size(1) - 1]);
    out.push_back(token);
    sequence.push_back(token);
    if (std::find(request.stop_tokens.begin(), request.stop_tokens.end(), token) != request.stop_tokens.end()) break;
  }
  return out;
}

}  // namespace pw
